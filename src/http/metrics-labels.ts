/** The label value of everything that is not a registered name, or past a label's bound. */
export const UNKNOWN_LABEL = "unknown";

/**
 * The names Magpie itself registered, which alone may become label values: a tool name the model made up, a
 * channel, model or trigger nobody configured is `unknown` — a stranger's words never become a series.
 */
export interface RegisteredNames {
  /** A tool in the registry (built-in, skill or connected MCP tool). */
  tool(name: string): boolean;
  /** A channel of the catalog or an adapter the app runs (the console, the dashboard's web chat). */
  channel(name: string): boolean;
  /** A model the config names (llm.model, fallbacks, agents' models, embedding, transcription, speech). */
  model(name: string): boolean;
  /** A trigger of the config. */
  trigger(name: string): boolean;
}

/** Maps a raw value to the value a series is labelled with. */
export type LabelValue = (raw: string) => string;

/**
 * One label's values: `registered` ones pass, at most `max` distinct values ever (a bound on the series a label
 * can add however many names get registered over a run — one-shot cron jobs, reloads); the rest is `unknown`.
 */
export function boundedLabel(max: number, registered: (raw: string) => boolean = () => true): LabelValue {
  const seen = new Set<string>();
  return (raw) => {
    if (seen.has(raw)) return raw;
    if (seen.size >= max || !registered(raw)) return UNKNOWN_LABEL;
    seen.add(raw);
    return raw;
  };
}

/** How many distinct values each label may take (each plus `unknown`). */
export const LABEL_BOUNDS = {
  /** Built-in tools are ~60; MCP servers add theirs. */
  tool: 500,
  channel: 32,
  model: 64,
  /** Cron jobs and triggers: the store and the config hold them; one-shot jobs come and go. */
  job: 200,
  trigger: 200,
  /** Values Magpie's code chooses (origin, outcome, verdict, status, result): a handful each. */
  fixed: 32,
} as const;
