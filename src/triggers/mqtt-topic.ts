/** MQTT topic filters: matching, syntax, and what a trigger made in chat may subscribe to. */

/** MQTT topic matching: `+` one level, `#` the rest (and the parent level itself). */
export function topicMatches(filter: string, topic: string): boolean {
  const filterLevels = filter.split("/");
  const topicLevels = topic.split("/");
  for (let index = 0; index < filterLevels.length; index++) {
    const level = filterLevels[index];
    if (level === "#") return index > 0 || !topic.startsWith("$");
    if (index >= topicLevels.length) return false;
    if (level === "+") {
      if (index === 0 && topic.startsWith("$")) return false;
      continue;
    }
    if (level !== topicLevels[index]) return false;
  }
  return filterLevels.length === topicLevels.length;
}

/** Why `filter` is not a valid MQTT topic filter (null when it is): wildcards fill a level, `#` comes last. */
export function topicFilterProblem(filter: string): string | null {
  if (filter.includes("\0")) return "a topic filter can't hold a NUL character";
  if (Buffer.byteLength(filter) > 65_535) return "a topic filter is at most 65,535 bytes";
  const levels = filter.split("/");
  for (const [index, level] of levels.entries()) {
    if (level.includes("#") && (level !== "#" || index !== levels.length - 1))
      return `"${filter}": # must be a whole level and the last one (e.g. home/#)`;
    if (level.includes("+") && level !== "+")
      return `"${filter}": + must be a whole level (e.g. home/+/temperature)`;
  }
  return null;
}

/**
 * Why a trigger made in chat may not subscribe to `filter` (null when it may): it names at least one level of its
 * own (no `#`, `+/#`, `+/+`… that take in everything the broker carries) and never the broker's own `$` topics.
 * The owner can still write a wide one in the config file.
 */
export function chatFilterProblem(filter: string): string | null {
  if (filter.startsWith("$"))
    return `"${filter}": a trigger made in chat can't read the broker's own $ topics`;
  if (filter.split("/").every((level) => level === "+" || level === "#" || level === ""))
    return `"${filter}" takes in every topic on the broker; a trigger made in chat names at least one level (e.g. home/+/temperature)`;
  return null;
}
