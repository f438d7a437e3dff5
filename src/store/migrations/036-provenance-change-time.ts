import type { Migration } from "./index.js";

/**
 * A written file's provenance row also holds its device, inode and status-change time (ns) at the write. Size and
 * modification time alone can be put back by whoever changes the file (`touch -d`, `os.utime`, `rsync -t`): a
 * same-size edit with the old mtime was still vouched for as Magpie's own. The change time can't be set from user
 * space and moves with every write, chmod, rename or new hard link. Rows from before this migration have no
 * signature (`''`) and match nothing: such a file counts as untrusted until Magpie writes it again.
 */
export const provenanceChangeTimeMigration: Migration = {
  version: 36,
  name: "security: provenance rows hold the file's inode and change time",
  up: `
    ALTER TABLE file_provenance ADD COLUMN change_sig TEXT NOT NULL DEFAULT '';
  `,
};
