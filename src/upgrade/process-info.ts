import { readFileSync } from "node:fs";
import { errorCode } from "../lib/errors.js";

/** The environment a running process started with (Linux /proc), or null when it can't be read. */
export function environmentOf(pid: number): NodeJS.ProcessEnv | null {
  try {
    const env: NodeJS.ProcessEnv = {};
    for (const entry of readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")) {
      const equals = entry.indexOf("=");
      if (equals > 0) env[entry.slice(0, equals)] = entry.slice(equals + 1);
    }
    return env;
  } catch {
    return null;
  }
}

/** The user and group a running process runs as (Linux /proc), or null. */
export function userOf(pid: number): { uid: number; gid: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
    const gid = Number(/^Gid:\s+(\d+)/m.exec(status)?.[1]);
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : null;
  } catch {
    return null;
  }
}

/** Whether `pid` runs: a zombie (exited, not yet reaped by its parent) counts as gone. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return errorCode(error) === "EPERM";
  }
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return true;
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
