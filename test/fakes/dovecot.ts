import { type ChildProcess, spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import net from "node:net";
import { tmpdir, userInfo } from "node:os";
import path from "node:path";
import { hasPrograms } from "../helpers/requires.js";

/** Debian installs dovecot in /usr/sbin, which a non-root PATH may lack. */
function withSbinOnPath(): void {
  const dirs = (process.env.PATH ?? "").split(path.delimiter);
  if (!dirs.includes("/usr/sbin") && existsSync("/usr/sbin/dovecot"))
    process.env.PATH = [...dirs, "/usr/sbin"].join(path.delimiter);
}

/** True when `dovecot` can run here (skipped with the reason otherwise; a failure under CI). */
export function hasDovecot(): boolean {
  withSbinOnPath();
  return hasPrograms("dovecot");
}

/** A running Dovecot IMAP server with one passwd-file user per entry of `users`. */
export interface Dovecot {
  host: string;
  port: number;
  /** The directory holding config, mail and state; kept across `restart()`. */
  dir: string;
  /** Stops and starts the server on the same port with the same mail (a server restart). */
  restart(): Promise<void>;
  /** Stops the server, keeping its directory (network loss). */
  halt(): Promise<void>;
  /** Starts a halted server again on the same port. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

/** The uid and gid of a system user, from /etc/passwd. */
function systemUser(name: string): { uid: number; gid: number } {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((entry) => entry.startsWith(`${name}:`));
  const [, , uid, gid] = line?.split(":") ?? [];
  if (uid === undefined || gid === undefined) throw new Error(`no ${name} user: is dovecot-imapd installed?`);
  return { uid: Number(uid), gid: Number(gid) };
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * Dovecot in the foreground (`-F -c <config>`) as the current user: no SSL, plaintext auth on 127.0.0.1, a
 * passwd-file with plain passwords, maildirs in a temp directory, and every internal/login user set to us so
 * it needs no privileges (run as root, login and internal processes use the package's dovenull and dovecot).
 */
export async function startDovecot(users: Record<string, string>): Promise<Dovecot> {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-dovecot-"));
  const port = await freePort();
  const me = userInfo();
  // Dovecot refuses to run login processes as root: as root, they run as the package's unprivileged users.
  const root = me.uid === 0;
  const internalUser = root ? "dovecot" : me.username;
  const loginUser = root ? "dovenull" : me.username;
  const group = root ? "dovecot" : me.username;
  // Mail processes never run as root either: as root, mail belongs to the dovecot user.
  const mailOwner = root ? systemUser("dovecot") : { uid: me.uid, gid: me.gid };
  if (root) chmodSync(dir, 0o755);
  writeFileSync(
    path.join(dir, "passwd"),
    Object.entries(users)
      .map(([user, password]) => `${user}:{PLAIN}${password}::::::`)
      .join("\n"),
  );
  for (const sub of ["run", "state", "mail", "home"]) mkdirSync(path.join(dir, sub));
  for (const sub of ["mail", "home"]) chownSync(path.join(dir, sub), mailOwner.uid, mailOwner.gid);
  const config = path.join(dir, "dovecot.conf");
  writeFileSync(
    config,
    [
      `base_dir = ${dir}/run`,
      `state_dir = ${dir}/state`,
      `log_path = ${dir}/dovecot.log`,
      "protocols = imap",
      // Inotify may not reach the mail processes here; IDLE then checks the mailbox every second.
      "mailbox_idle_check_interval = 1 secs",
      "listen = 127.0.0.1",
      "ssl = no",
      "disable_plaintext_auth = no",
      "auth_mechanisms = plain login",
      `default_internal_user = ${internalUser}`,
      `default_internal_group = ${group}`,
      `default_login_user = ${loginUser}`,
      "first_valid_uid = 0",
      "first_valid_gid = 0",
      `mail_location = maildir:${dir}/mail/%u`,
      "passdb {",
      "  driver = passwd-file",
      `  args = ${dir}/passwd`,
      "}",
      "userdb {",
      "  driver = static",
      `  args = uid=${mailOwner.uid} gid=${mailOwner.gid} home=${dir}/home/%u`,
      "}",
      "service imap-login {",
      "  chroot =",
      `  inet_listener imap {\n    address = 127.0.0.1\n    port = ${port}\n  }`,
      "  inet_listener imaps {\n    port = 0\n  }",
      "}",
      "service anvil {\n  chroot =\n}",
      `service auth {\n  user = ${me.username}\n}`,
      "service stats {\n  unix_listener stats-reader {\n    user = $default_internal_user\n  }\n  unix_listener stats-writer {\n    user = $default_internal_user\n  }\n}",
      "",
    ].join("\n"),
  );
  let child: ChildProcess | null = null;

  async function launch(): Promise<void> {
    const started = spawn("dovecot", ["-F", "-c", config], { stdio: ["ignore", "ignore", "pipe"] });
    child = started;
    let stderr = "";
    started.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const deadline = Date.now() + 10_000;
    while (!(await accepting(port))) {
      if (started.exitCode !== null || Date.now() > deadline) {
        started.kill();
        throw new Error(`dovecot did not start on ${port}: ${stderr}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async function halt(): Promise<void> {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill("SIGTERM");
    await exited;
    // The master exits before its listeners are gone; wait until the port is free again.
    const deadline = Date.now() + 5_000;
    while ((await accepting(port)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }

  await launch();
  return {
    host: "127.0.0.1",
    port,
    dir,
    async restart() {
      await halt();
      await launch();
    },
    halt,
    resume: launch,
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A TCP relay in front of Dovecot that counts the bytes the server sent to its clients. */
export interface ImapTap {
  port: number;
  /** Bytes Dovecot sent through the relay so far (every connection). */
  readonly bytesToClient: number;
  /** Connections the relay accepted so far. */
  readonly connections: number;
  /**
   * The line goes quiet both ways without closing (a NAT that dropped the flow, a server that hangs): every
   * connection, and each new one, stays open and carries nothing until `resume()`.
   */
  stall(): void;
  /** Bytes flow again, what waited first. */
  resume(): void;
  close(): Promise<void>;
}

/**
 * Relays 127.0.0.1:<port> to Dovecot and counts what the server sends: whether a mail's body was fetched shows
 * in the count (an IMAP client can't be watched from outside any other way).
 */
export async function imapTap(dovecot: Dovecot): Promise<ImapTap> {
  let bytes = 0;
  let connections = 0;
  let stalled = false;
  const sockets = new Set<net.Socket>();
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  const flow = ({ client, upstream }: { client: net.Socket; upstream: net.Socket }) => {
    client.pipe(upstream);
    upstream.pipe(client);
  };
  const server = net.createServer((client) => {
    connections++;
    const upstream = net.connect(dovecot.port, dovecot.host);
    const pair = { client, upstream };
    pairs.add(pair);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => {
        sockets.delete(socket);
        pairs.delete(pair);
      });
      socket.on("error", () => undefined);
    }
    upstream.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
    });
    if (stalled) upstream.pause();
    else flow(pair);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    get bytesToClient() {
      return bytes;
    },
    get connections() {
      return connections;
    },
    stall() {
      stalled = true;
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    resume() {
      stalled = false;
      for (const pair of pairs) flow(pair);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
