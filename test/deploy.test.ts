import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

// No Docker engine runs here: check what can be checked — the files parse and every path they use exists.
describe("deployment files", () => {
  it("docker-compose.yml parses and mounts data and config", () => {
    const compose = parse(readFileSync("docker-compose.yml", "utf8"));
    const service = compose.services.magpie;
    expect(service.build).toBe(".");
    expect(service.volumes).toEqual(expect.arrayContaining(["./data:/app/data", "./config:/app/config:ro"]));
    expect(service.ports).toEqual(["127.0.0.1:8787:8787"]);
  });

  it("every COPY source in the Dockerfile exists", () => {
    const sources = readFileSync("Dockerfile", "utf8")
      .split("\n")
      .filter((line) => line.startsWith("COPY ") && !line.includes("--from="))
      .flatMap((line) => line.slice(5).trim().split(/\s+/).slice(0, -1));
    expect(sources.length).toBeGreaterThan(4);
    for (const source of sources) expect(existsSync(source), source).toBe(true);
  });
});
