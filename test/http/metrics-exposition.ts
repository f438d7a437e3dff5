/** One sample of a Prometheus text exposition: `name{labels} value`, keyed as the text writes it. */
export type Samples = Map<string, number>;

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$/;

/**
 * A strict parser of the text format (version 0.0.4): every line is a HELP, a TYPE or a sample; every sample
 * belongs to a family with a TYPE; values are numbers. Throws on anything else, so a malformed exposition fails.
 */
export function parseExposition(text: string): { samples: Samples; types: Map<string, string> } {
  const types = new Map<string, string>();
  const samples: Samples = new Map();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("# HELP ")) continue;
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not a valid exposition line: ${line}`);
    const [, name, labels = "", raw] = sample;
    const family = name!.replace(/_(bucket|sum|count|total|created)$/, "");
    if (!types.has(name!) && !types.has(family) && !types.has(`${family}_total`)) {
      throw new Error(`sample without a TYPE: ${line}`);
    }
    // Go's ParseFloat (Prometheus' parser) reads NaN in any case; prom-client writes "Nan".
    const value = raw === "+Inf" ? Infinity : raw === "-Inf" ? -Infinity : Number(raw);
    if (Number.isNaN(value) && !/^nan$/i.test(raw!)) throw new Error(`not a number: ${line}`);
    samples.set(`${name}${labels}`, value);
  }
  return { samples, types };
}

/** The sum of every sample of `name` whose labels include all of `labels`. */
export function sumOf(samples: Samples, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const [key, value] of samples) {
    if (!key.startsWith(`${name}{`) && key !== name) continue;
    if (Object.entries(labels).every(([label, wanted]) => key.includes(`${label}="${wanted}"`)))
      total += value;
  }
  return total;
}
