import type { AddressInfo } from "node:net";
import { type ParsedMail, simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";

/** A mail the receiver accepted, parsed, with the envelope it came with. */
export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
  parsed: ParsedMail;
}

/**
 * A real SMTP server (smtp-server, the nodemailer project's) on 127.0.0.1 that records what it accepts. It
 * takes one user/password, no TLS; `failNext` answers the next DATA with a given SMTP code.
 */
export class SmtpReceiver {
  readonly mails: ReceivedMail[] = [];
  port = 0;
  private nextFailure: { code: number; message: string } | null = null;
  private readonly server: SMTPServer;

  constructor(
    readonly user = "bot@example.org",
    readonly password = "smtp-secret",
  ) {
    this.server = new SMTPServer({
      secure: false,
      disabledCommands: ["STARTTLS"],
      authOptional: false,
      logger: false,
      onAuth: (auth, _session, callback) => {
        if (auth.username === this.user && auth.password === this.password)
          callback(null, { user: auth.username });
        else callback(Object.assign(new Error("Invalid username or password"), { responseCode: 535 }));
      },
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", () => {
          const failure = this.nextFailure;
          this.nextFailure = null;
          if (failure) {
            callback(Object.assign(new Error(failure.message), { responseCode: failure.code }));
            return;
          }
          const raw = Buffer.concat(chunks).toString("utf8");
          simpleParser(raw).then(
            (parsed) => {
              this.mails.push({
                from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
                to: session.envelope.rcptTo.map((recipient) => recipient.address),
                raw,
                parsed,
              });
              callback();
            },
            (error: Error) => callback(error),
          );
        });
      },
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", () => resolve()));
    this.port = (this.server.server.address() as AddressInfo).port;
    return this;
  }

  /** The next mail is refused with `code` (4xx: try later, 5xx: permanent). */
  failNext(code: number, message = "refused for the test"): void {
    this.nextFailure = { code, message };
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
