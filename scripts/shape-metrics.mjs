#!/usr/bin/env node
// Counts the shape numbers issue 34 tracks (casts, JSON.parse casts, SQLite row casts, app.ts lines) with the
// TypeScript compiler's own parser, so comments and strings that say "as" are not counted.
// Usage: node scripts/shape-metrics.mjs [--list json|row|all]
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

const roots = ["src", "channels"];
const list = process.argv.includes("--list") ? process.argv[process.argv.indexOf("--list") + 1] : null;

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* files(full);
    else if (full.endsWith(".ts") && !full.endsWith(".d.ts")) yield full;
  }
}

const ROW_METHODS = new Set(["get", "all", "iterate", "pluck"]);

// A row cast is a cast of what a better-sqlite3 Statement's get/all/iterate returned: the checker tells.
const configFile = ts.readConfigFile("tsconfig.json", ts.sys.readFile);
const parsedConfig = ts.parseJsonConfigFileContent(configFile.config, ts.sys, process.cwd());
const program = ts.createProgram(parsedConfig.fileNames, parsedConfig.options);
const checker = program.getTypeChecker();
const isStatement = (expression) => {
  const type = checker.getTypeAtLocation(expression);
  return (type.getSymbol() ?? type.aliasSymbol)?.getName() === "Statement";
};
const counts = { casts: 0, jsonParseCasts: 0, rowCasts: 0 };
const byFolder = new Map();
for (const root of roots) {
  for (const file of files(root)) {
    const source =
      program.getSourceFile(path.resolve(file)) ??
      ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
    const folder = file.split(path.sep).slice(0, 2).join("/");
    const visit = (node) => {
      if (ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) {
        const typeText = node.type.getText(source);
        if (typeText !== "const") {
          counts.casts++;
          byFolder.set(folder, (byFolder.get(folder) ?? 0) + 1);
          let inner = node.expression;
          while (ts.isAsExpression(inner) || ts.isParenthesizedExpression(inner)) inner = inner.expression;
          const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
          if (ts.isCallExpression(inner) && ts.isPropertyAccessExpression(inner.expression)) {
            const callee = inner.expression;
            if (callee.expression.getText(source) === "JSON" && callee.name.text === "parse") {
              counts.jsonParseCasts++;
              if (list === "json" || list === "all") console.log(`json ${file}:${line}`);
            } else if (ROW_METHODS.has(callee.name.text) && isStatement(callee.expression)) {
              counts.rowCasts++;
              if (list === "row" || list === "all") console.log(`row  ${file}:${line}`);
            } else if (list === "all") console.log(`cast ${file}:${line}`);
          } else if (list === "all") console.log(`cast ${file}:${line}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
}
const appLines = readFileSync("src/app/app.ts", "utf8").split("\n").length;
console.log(JSON.stringify({ ...counts, appTsLines: appLines }, null, 0));
if (process.argv.includes("--folders"))
  for (const [folder, n] of [...byFolder].sort((a, b) => b[1] - a[1]))
    console.log(`${String(n).padStart(4)} ${folder}`);
