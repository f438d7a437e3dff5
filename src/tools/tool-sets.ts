/** Tool sets from DESIGN.md. `full` = every enabled tool; `subagent` never escalates. */
export const DEFAULT_SET = ["shell", "file_read", "file_write", "file_edit"] as const;

export const SUBAGENT_SET = [
  "shell",
  "file_read",
  "file_write",
  "file_edit",
  "git_operations",
  "http_request",
] as const;

/** Tools a subagent may never receive, whatever its configured list says. */
export const NEVER_FOR_SUBAGENTS = [
  /^message$/,
  /^spawn$/,
  /^delegate$/,
  /^schedule$/,
  /^cron_/,
  /^trigger_/,
  /^mqtt_publish$/,
  /^memory_/,
  /^composio$/,
  /^browser/,
  /^pushover$/,
  /^notify$/,
  /^ask_question$/,
  /^mcp__/,
];

/** Always available when a turn has any tools: reading spilled output back. */
export const ALWAYS_AVAILABLE = ["spill_read"] as const;
