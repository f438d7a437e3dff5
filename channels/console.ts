import readline from "node:readline";
import type {
  ChannelAdapter,
  ChannelCapabilities,
  ChannelStatus,
  InboundSink,
  OutboundMessage,
  ReplyTarget,
  SendProgress,
  SendResult,
} from "../src/core/types.js";
import { revealInvisible } from "../src/lib/reveal-invisible.js";
import { renderForTerminal, type TerminalStyle } from "./format/terminal.js";

export interface ConsoleChannelOptions {
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
  /** Called when the input ends (Ctrl-D) or the user types /exit. */
  onClose?: () => void;
  userName?: string;
  /** ANSI styles for Markdown; default: when the output is a TTY and NO_COLOR is unset. */
  color?: boolean;
}

export const CONSOLE_CHAT_ID = "local";

/** Chat in the terminal: each line is a message from the owner; replies are printed. */
export class ConsoleChannel implements ChannelAdapter {
  readonly name = "console";
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: 1_000_000,
    edit: false,
    buttons: false,
    typing: false,
    threads: false,
  };
  private state: ChannelStatus = { state: "starting", since: Date.now() };
  private lines: readline.Interface | undefined;
  private counter = 0;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly input: NodeJS.ReadableStream;
  private readonly output: NodeJS.WritableStream;

  constructor(private readonly options: ConsoleChannelOptions = {}) {
    this.input = options.input ?? process.stdin;
    this.output = options.output ?? process.stdout;
  }

  async start(sink: InboundSink): Promise<void> {
    const terminal = Boolean((this.output as NodeJS.WriteStream).isTTY);
    this.lines = readline.createInterface({
      input: this.input,
      output: this.output,
      terminal,
      prompt: "you> ",
    });
    this.lines.on("line", (line) => {
      const text = line.trim();
      if (!text) return this.lines?.prompt();
      if (text === "/exit" || text === "/quit") return this.lines?.close();
      const messageId = `${Date.now()}-${++this.counter}`;
      const accepted = sink.message({
        channel: this.name,
        chatId: CONSOLE_CHAT_ID,
        messageId,
        userId: "owner",
        userName: this.options.userName ?? process.env.USER ?? "owner",
        text,
        isDirect: true,
        mentionsBot: true,
        attachments: [],
        receivedAt: Date.now(),
      });
      this.inFlight.add(accepted);
      void accepted.finally(() => this.inFlight.delete(accepted));
    });
    this.lines.on("close", async () => {
      // Lines typed (or piped) just before the end still reach the inbox before we report the close.
      await Promise.allSettled([...this.inFlight]);
      this.state = { state: "stopped", since: Date.now() };
      this.options.onClose?.();
    });
    this.state = { state: "connected", since: Date.now() };
    this.output.write("Magpie console — type a message, /help for commands, /exit to leave.\n");
    this.lines.prompt();
  }

  async send(_target: ReplyTarget, message: OutboundMessage, progress?: SendProgress): Promise<SendResult> {
    const id = `console-${Date.now()}-${++this.counter}`;
    if ((progress?.partsSent ?? 0) === 0) {
      // The model's words may carry what a page or mail put there: control characters (OSC 52 clipboard
      // writes, clear screen) are made visible before the terminal's own styles are added.
      const words = revealInvisible(message.text);
      const text = message.format === "plain" ? words : renderForTerminal(words, this.style());
      // The terminal shows no pictures: the file is named by its path, which the owner can open.
      const file = message.file ? `[${message.file.kind}: ${revealInvisible(message.file.path)}]\n` : "";
      this.output.write(`\nmagpie> ${text}\n${file}`);
      progress?.onPartSent(0, id);
      this.lines?.prompt(true);
    }
    return { messageIds: [id] };
  }

  private style(): TerminalStyle {
    const tty = Boolean((this.output as NodeJS.WriteStream).isTTY);
    return { color: this.options.color ?? (tty && !process.env.NO_COLOR) };
  }

  status(): ChannelStatus {
    return this.state;
  }

  async stop(): Promise<void> {
    this.lines?.removeAllListeners("close");
    this.lines?.close();
    this.state = { state: "stopped", since: Date.now() };
  }
}
