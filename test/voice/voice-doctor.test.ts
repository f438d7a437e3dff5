import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { voiceChecks } from "../../src/voice/voice-doctor.js";
import { hasPrograms } from "../helpers/requires.js";

const PATH = process.env.PATH;
afterEach(() => {
  process.env.PATH = PATH;
});

const config = (voice: Record<string, unknown>) => parseConfig({ voice }, { env: {}, cwd: "/tmp" });

describe("magpie doctor: voice", () => {
  it("engine llm needs no program on the box", () => {
    process.env.PATH = "/nonexistent";
    expect(voiceChecks(config({ replies: "mirror" }))).toEqual([
      expect.objectContaining({
        name: "voice",
        verdict: "ok",
        detail: expect.stringContaining("/audio/speech"),
      }),
    ]);
  });

  it("engine espeak without espeak-ng names the package to install", () => {
    process.env.PATH = "/nonexistent";
    expect(voiceChecks(config({ replies: "always", engine: "espeak" }))).toEqual([
      expect.objectContaining({ verdict: "fail", fix: "sudo apt install espeak-ng" }),
    ]);
  });

  it.runIf(hasPrograms("espeak-ng", "opusenc"))("engine espeak with espeak-ng and opusenc is ready", () => {
    expect(voiceChecks(config({ replies: "always", engine: "espeak" }))).toEqual([
      expect.objectContaining({ verdict: "ok", detail: expect.stringContaining("opusenc") }),
    ]);
  });
});
