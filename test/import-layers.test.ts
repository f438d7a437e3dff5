import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * The layers of the code, bottom first (docs/architecture.md draws them). A module may import from its own folder
 * and from folders below it; an import that points up is an arrow the house should not have. The few that are
 * there on purpose are listed in JUSTIFIED with the reason — a new one fails this test until it is either moved
 * where the layers say or argued for here. (Like `catalog.test.ts` for channel names: a rule a test guards
 * survives the next busy week.)
 */
const LAYERS = [
  "lib",
  "config",
  "log",
  "llm",
  "store",
  "core",
  "security",
  "notify",
  "memory",
  "media",
  "voice",
  "usage",
  "skills",
  "scheduler",
  "hardware",
  "triggers",
  "browser",
  "composio",
  "tools",
  "mcp",
  "http",
  "channels",
  "dashboard",
  "upgrade",
  "app",
  "cli",
] as const;

/** Upward arrows kept on purpose: `from -> to` and why. */
const JUSTIFIED: Record<string, string> = {
  "config -> channels":
    "the channel catalog is the channels' plug-in registry: each entry brings its own config section, " +
    "environment variables and secrets, so a new channel touches no file in src/ (catalog.test.ts)",
  "tools -> channels":
    "the message tools name their target channels and each channel's upload limits from the catalog, " +
    "so the tool's parameters list exactly the channels that exist",
  "config -> triggers":
    "the trigger source catalog is the sources' plug-in registry: each source (src/triggers/sources/<key>.ts) brings " +
    "its own `on` shape, so a new source is one file and one catalog line (source-catalog.test.ts)",
};

const ROOT = path.resolve(import.meta.dirname, "..");

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts"))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)));
}

/** `src/<folder>/…` → folder; `src/x.ts` → x; anything under `channels/` → channels. */
function layerOf(file: string): string {
  const [top, second = ""] = file.split(path.sep);
  if (top === "channels") return "channels";
  return file.split(path.sep).length > 2 ? second : second.replace(/\.ts$/, "");
}

/** Every relative module a file imports (static, type-only, re-exports and dynamic `import()`). */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      if (ts.isStringLiteral(node.moduleSpecifier)) found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found
    .filter((specifier) => specifier.startsWith("."))
    .map((specifier) => path.normalize(path.join(path.dirname(file), specifier)));
}

/** Folder-to-folder arrows that point up, each with the imports that make it. */
function upwardArrows(): Map<string, string[]> {
  const arrows = new Map<string, string[]>();
  for (const file of [...sourceFiles("src"), ...sourceFiles("channels")]) {
    const from = layerOf(file);
    for (const target of importsOf(file)) {
      if (!target.startsWith(`src${path.sep}`) && !target.startsWith(`channels${path.sep}`)) continue;
      const to = layerOf(target);
      if (from === to) continue;
      const fromRank = LAYERS.indexOf(from as (typeof LAYERS)[number]);
      const toRank = LAYERS.indexOf(to as (typeof LAYERS)[number]);
      if (fromRank === -1 || toRank === -1) {
        arrows.set(`unknown layer: ${fromRank === -1 ? from : to}`, [`${file} -> ${target}`]);
        continue;
      }
      if (toRank <= fromRank) continue;
      const key = `${from} -> ${to}`;
      arrows.set(key, [...(arrows.get(key) ?? []), `${file} -> ${target}`]);
    }
  }
  return arrows;
}

describe("the layers", () => {
  const arrows = upwardArrows();

  it("puts every folder of src/ in a layer", () => {
    const folders = readdirSync(path.join(ROOT, "src"), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders.filter((folder) => !(LAYERS as readonly string[]).includes(folder))).toEqual([]);
  });

  it("has no upward import beyond the justified ones", () => {
    const unjustified = [...arrows]
      .filter(([key]) => !(key in JUSTIFIED))
      .map(([key, files]) => ({ key, files }));
    expect(unjustified).toEqual([]);
  });

  it("keeps the justified arrows at three", () => {
    expect(Object.keys(JUSTIFIED).length).toBeLessThanOrEqual(3);
  });

  it("lists no justified arrow the code no longer has", () => {
    expect(Object.keys(JUSTIFIED).filter((key) => !arrows.has(key))).toEqual([]);
  });
});
