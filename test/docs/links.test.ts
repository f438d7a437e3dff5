import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { docCommands, docLinks, docPages, headingAnchors, splitComment } from "./doc-pages.js";

/** The docs hold together: every relative link and image lands on a file (and heading) that exists. */

describe("docs: links", () => {
  it("every relative link and image in README.md and docs/ resolves, anchors included", () => {
    const broken: string[] = [];
    let checked = 0;
    for (const page of docPages()) {
      for (const link of docLinks(page)) {
        if (/^[a-z][a-z+.-]*:/i.test(link.target)) continue; // https:, mailto: — not ours to check offline
        checked++;
        const [file, anchor] = link.target.split("#") as [string, string | undefined];
        const target = file === "" ? page : path.join(path.dirname(page), decodeURIComponent(file));
        if (!existsSync(target)) {
          broken.push(`${page}:${link.line}: ${link.target} — no file ${target}`);
          continue;
        }
        if (anchor && target.endsWith(".md") && !headingAnchors(target).has(anchor)) {
          broken.push(`${page}:${link.line}: ${link.target} — no heading #${anchor} in ${target}`);
        }
      }
    }
    expect(broken).toEqual([]);
    expect(checked).toBeGreaterThan(40);
  });

  it("the README is the front door: short, and links every page of docs/", () => {
    const readmeLinks = new Set(docLinks("README.md").map((link) => link.target.split("#")[0]));
    const indexLinks = new Set(docLinks("docs/README.md").map((link) => link.target.split("#")[0]));
    for (const page of docPages().filter((page) => page.startsWith("docs/") && page !== "docs/README.md")) {
      expect(indexLinks, `docs/README.md links ${page}`).toContain(path.basename(page));
      if (page !== "docs/hardware-protocol.md")
        expect(readmeLinks, `README.md links ${page}`).toContain(page);
    }
    expect(readmeLinks).toContain("docs/README.md");
    expect(statSync("README.md").size).toBeLessThan(8 * 1024);
  });

  it("headings get GitHub's anchors; comments split only outside quotes; `→ exit N` sets the status", () => {
    const anchors = headingAnchors("docs/channels.md");
    expect(anchors).toContain("first-contact-pairing");
    expect(anchors).toContain("e-mail");
    expect(headingAnchors("docs/troubleshooting.md")).toContain("magpie-trace");
    expect(splitComment('magpie send telegram 1 "not # a comment"   # a comment')).toEqual({
      command: 'magpie send telegram 1 "not # a comment"',
      comment: "a comment",
    });
    expect(splitComment("magpie backup --to x-$(date +%a).db")).toEqual({
      command: "magpie backup --to x-$(date +%a).db",
      comment: "",
    });
    expect(splitComment("magpie trace a#b")).toEqual({ command: "magpie trace a#b", comment: "" });
    const commands = docPages().flatMap((page) => docCommands(page));
    const doctor = commands.find((command) => command.page === "docs/troubleshooting.md");
    expect(doctor).toMatchObject({ expectedStatus: 0 });
    expect(doctor!.command.startsWith("magpie ")).toBe(true);
  });
});
