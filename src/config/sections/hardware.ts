import { z } from "zod";

/** Board types Magpie knows (static facts in src/hardware/boards.ts). */
export const BOARD_TYPES = [
  "rpi-gpio",
  "arduino-uno",
  "arduino-uno-q",
  "esp32",
  "nucleo-f401re",
  "nucleo-f411re",
] as const;

export type BoardType = (typeof BOARD_TYPES)[number];

/** Boards reached over a serial line speaking Magpie's JSON-lines protocol (docs/hardware-protocol.md). */
export const SERIAL_BOARD_TYPES: readonly BoardType[] = [
  "arduino-uno",
  "arduino-uno-q",
  "esp32",
  "nucleo-f401re",
  "nucleo-f411re",
];

const boardSchema = z.strictObject({
  name: z.string().regex(/^[a-zA-Z0-9_-]+$/, "board names are letters, digits, '-' and '_'"),
  type: z.enum(BOARD_TYPES),
  /** Serial device (e.g. /dev/ttyACM0); required for arduino/esp32/nucleo boards. */
  port: z.string().min(1).optional(),
  baud: z.number().int().positive().optional(),
  /** rpi-gpio: the sysfs GPIO chip (`gpiochip512`) or its label (`pinctrl-bcm2711`); default: the SoC's. */
  gpioChip: z.string().min(1).optional(),
  /** rpi-gpio: the default I2C bus number (default 1). */
  i2cBus: z.number().int().min(0).optional(),
  /** rpi-gpio: the default SPI device (default /dev/spidev0.0). */
  spiDevice: z.string().min(1).optional(),
  /** nucleo: the probe-rs probe selector (VID:PID[:serial]); memory goes through probe-rs when it is installed. */
  probe: z.string().min(1).optional(),
});

const pinSchema = z.strictObject({
  /** The board the pin is on (default: the only rpi-gpio board, else the only board). */
  board: z.string().min(1).optional(),
  /** BCM line number on a Pi, the sketch's pin number on a serial board. */
  line: z.number().int().min(0).max(1023),
  direction: z.enum(["in", "out"]),
  activeLow: z.boolean().default(false),
  edge: z.enum(["rising", "falling", "both"]).optional(),
  debounceMs: z.number().int().min(0).max(60_000).default(0),
});

const watchSchema = z.strictObject({
  pin: z.string().min(1),
  notify: z
    .strictObject({
      channel: z.string().min(1).optional(),
      chat_id: z.union([z.string().min(1), z.number()]).optional(),
      pushover: z.boolean().default(false),
    })
    .prefault({}),
  /** When set, an edge also starts an agent turn in the notify chat with this prompt. */
  prompt: z.string().min(1).optional(),
  /** At most this many events per pin per minute; more are counted and reported once (default 6). */
  maxPerMinute: z.number().int().min(1).max(600).default(6),
});

/** `hardware`: boards, named pins and watched pins (DESIGN.md → Hardware). */
export const hardwareSchema = z
  .strictObject({
    boards: z.array(boardSchema).default([]),
    pins: z.record(z.string().regex(/^[a-zA-Z0-9_-]+$/), pinSchema).default({}),
    watch: z.array(watchSchema).default([]),
  })
  .superRefine((hardware, issue) => {
    const names = new Set<string>();
    hardware.boards.forEach((board, index) => {
      const path = ["boards", index];
      if (names.has(board.name))
        issue.addIssue({ code: "custom", path, message: `duplicate board "${board.name}"` });
      names.add(board.name);
      const serial = SERIAL_BOARD_TYPES.includes(board.type);
      if (serial && !board.port)
        issue.addIssue({
          code: "custom",
          path,
          message: `a ${board.type} board needs \`port\` (e.g. /dev/ttyACM0)`,
        });
      if (board.type !== "rpi-gpio") {
        for (const key of ["gpioChip", "i2cBus", "spiDevice"] as const) {
          if (board[key] !== undefined)
            issue.addIssue({
              code: "custom",
              path: [...path, key],
              message: `only rpi-gpio boards take ${key}`,
            });
        }
      }
      if (board.probe !== undefined && !board.type.startsWith("nucleo-"))
        issue.addIssue({
          code: "custom",
          path: [...path, "probe"],
          message: "only nucleo boards take probe",
        });
    });
    for (const [name, pin] of Object.entries(hardware.pins)) {
      const path = ["pins", name];
      const board = pinBoard(hardware.boards, pin.board);
      if (!board) {
        issue.addIssue({
          code: "custom",
          path,
          message: pin.board
            ? `unknown board "${pin.board}"`
            : "give `board`: there is no single board to put this pin on",
        });
        continue;
      }
      if (board.type !== "rpi-gpio" && (pin.edge || pin.debounceMs > 0))
        issue.addIssue({
          code: "custom",
          path,
          message: `edge/debounceMs on a ${board.type} pin is not supported yet (watching works on rpi-gpio pins)`,
        });
      if (pin.direction === "out" && pin.edge)
        issue.addIssue({ code: "custom", path, message: "an `out` pin has no edge to watch" });
    }
    hardware.watch.forEach((watch, index) => {
      const path = ["watch", index];
      const pin = hardware.pins[watch.pin];
      if (!pin) {
        issue.addIssue({
          code: "custom",
          path,
          message: `unknown pin "${watch.pin}" (declare it in hardware.pins)`,
        });
        return;
      }
      if (!pin.edge)
        issue.addIssue({ code: "custom", path, message: `pin "${watch.pin}" needs an \`edge\`` });
      const { channel, chat_id, pushover } = watch.notify;
      if ((channel === undefined) !== (chat_id === undefined))
        issue.addIssue({
          code: "custom",
          path,
          message: "notify needs both channel and chat_id, or neither",
        });
      if (watch.prompt && channel === undefined)
        issue.addIssue({ code: "custom", path, message: "a prompt needs notify.channel and notify.chat_id" });
      if (channel === undefined && !pushover)
        issue.addIssue({
          code: "custom",
          path,
          message: "notify somewhere: channel + chat_id and/or pushover",
        });
    });
  })
  .prefault({});

export type HardwareConfig = z.infer<typeof hardwareSchema>;
export type BoardConfig = HardwareConfig["boards"][number];
export type PinConfig = HardwareConfig["pins"][string];
export type WatchConfig = HardwareConfig["watch"][number];

/** The board a pin is on: the named one, else the only rpi-gpio board, else the only board. */
export function pinBoard<Board extends { name: string; type: string }>(
  boards: readonly Board[],
  name: string | undefined,
): Board | undefined {
  if (name) return boards.find((board) => board.name === name);
  const pis = boards.filter((board) => board.type === "rpi-gpio");
  if (pis.length === 1) return pis[0];
  return boards.length === 1 ? boards[0] : undefined;
}
