/**
 * `npm run bench [-- <section> ...]`: runs benchmark sections and prints a table each.
 * Sections live in bench/<name>.ts and export `run(): Promise<void>`.
 */
const SECTIONS: Record<string, () => Promise<{ run(): Promise<void> }>> = {
  startup: () => import("./startup.js"),
  memory: () => import("./memory.js"),
  sandbox: () => import("./sandbox.js"),
  spend: () => import("./spend.js"),
  triggers: () => import("./triggers.js"),
  history: () => import("./history.js"),
  "hot-path": () => import("./hot-path.js"),
  "output-filter": () => import("./output-filter.js"),
};

async function main(): Promise<void> {
  const requested = process.argv.slice(2).filter((arg) => !arg.startsWith("-"));
  const names = requested.length > 0 ? requested : Object.keys(SECTIONS);
  for (const name of names) {
    const load = SECTIONS[name];
    if (!load) {
      console.error(`Unknown benchmark section "${name}". Known: ${Object.keys(SECTIONS).join(", ")}`);
      process.exitCode = 2;
      return;
    }
    console.log(`\n## ${name}\n`);
    await (await load()).run();
  }
}

await main();
