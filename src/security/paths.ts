import path from "node:path";

/** True when `child` is `parent` or below it (both absolute, normalized). */
export function isWithin(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}

/** `~` and `~/x` → the home directory. `~user` is not expanded (it stays a literal relative name). */
export function expandHome(requested: string, home: string): string {
  if (requested === "~") return home;
  if (requested.startsWith("~/")) return path.join(home, requested.slice(2));
  return requested;
}
