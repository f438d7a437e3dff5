/**
 * The production build: one esbuild bundle of the CLI (dist/bundle/main.js plus a chunk per lazily loaded part —
 * a channel library, a feature, a sub-command), so start-up reads a few files instead of resolving and linking
 * hundreds of modules (measured in `npm run bench -- startup`). `tsc` still type-checks and builds dist/src for
 * the tests; this file only packages what it built from the same sources.
 */
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { build } from "esbuild";

/**
 * Left to Node's own resolution at run time: native add-ons (and the optional hardware ones, which may be
 * absent), packages that find their own files next to themselves (WASM grammars, playwright's driver, pino-pretty
 * loaded through createRequire), and optional speed-ups that discord.js and ws try to require.
 */
const external = [
  "better-sqlite3",
  "serialport",
  "@serialport/*",
  "onoff",
  "i2c-bus",
  "spi-device",
  "playwright-core",
  "web-tree-sitter",
  "tree-sitter-bash",
  "pino-pretty",
  "pushover-notifications",
  "zlib-sync",
  "bufferutil",
  "utf-8-validate",
  "erlpack",
];

// Chunk names carry content hashes: a stale chunk of an earlier build would only take space.
// Built beside the old bundle and swapped in at the end, so a process starting meanwhile never finds main.js missing.
rmSync("dist/bundle.next", { recursive: true, force: true });

const result = await build({
  entryPoints: { main: "src/cli/main.ts" },
  outdir: "dist/bundle.next",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  external,
  // CommonJS dependencies inside an ES module bundle still call require() and read __dirname.
  banner: {
    js: [
      'import { createRequire as __magpieCreateRequire } from "node:module";',
      'import { fileURLToPath as __magpieFileURLToPath } from "node:url";',
      "const require = __magpieCreateRequire(import.meta.url);",
      "const __filename = __magpieFileURLToPath(import.meta.url);",
      'const __dirname = __magpieFileURLToPath(new URL(".", import.meta.url));',
    ].join("\n"),
  },
  chunkNames: "chunks/[name]-[hash]",
  // Class and function names stay as written: errors are classified by class name (src/llm/failure-kind.ts),
  // and a bundle would otherwise rename `APIError` to `APIError2` where two packages declare one.
  keepNames: true,
  minify: true,
  // Stack traces name the bundle's lines; `node --enable-source-maps` maps them back to src/.
  sourcemap: "linked",
  legalComments: "none",
  logLevel: "warning",
  metafile: true,
});

// A dynamic import() of a CommonJS package becomes its own chunk that exports only `default` (esbuild adds no
// named-export interop there), so `const { request } = await import("undici")` is undefined in the bundle while
// it works from the sources. Refuse such a build rather than ship it; import the package statically from a
// module that is itself loaded lazily (as src/security/pinned-agent.ts does for undici).
const commonJsChunks = Object.entries(result.metafile.outputs)
  .filter(([, output]) => output.entryPoint && result.metafile.inputs[output.entryPoint]?.format === "cjs")
  .map(([file, output]) => `${file} (${output.entryPoint})`);
if (commonJsChunks.length > 0) {
  console.error(
    `A CommonJS package is loaded with a dynamic import(), which breaks its named exports in the bundle:\n  ${commonJsChunks.join("\n  ")}\nImport it statically from a lazily loaded module of ours instead.`,
  );
  process.exit(1);
}

// Which sources went into which chunk: scripts/check-chunk-coverage.mjs names an unloaded chunk by them.
writeFileSync(
  "dist/bundle.next/meta.json",
  JSON.stringify(result.metafile).replaceAll("dist/bundle.next/", "dist/bundle/"),
);
rmSync("dist/bundle", { recursive: true, force: true });
renameSync("dist/bundle.next", "dist/bundle");
