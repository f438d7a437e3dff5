import type { BoardConfig, BoardType } from "../config/sections/hardware.js";
import { SERIAL_BOARD_TYPES } from "../config/sections/hardware.js";

/** What a board type can do through Magpie's tools. */
export interface BoardCapabilities {
  gpio: boolean;
  serial: boolean;
  i2c: boolean;
  spi: boolean;
  memory: boolean;
}

/** Static facts about a board type: what the datasheet says. */
export interface BoardFacts {
  title: string;
  chip: string;
  architecture: string;
  /** Memory regions as name → "start–end (size)". */
  memoryMap: Record<string, string>;
  pins: string;
  connection: string;
  /** probe-rs `--chip` name, for boards whose memory we read through a debug probe. */
  probeChip?: string;
  capabilities: BoardCapabilities;
}

const serialBoard = { gpio: true, serial: true, i2c: false, spi: false, memory: false };

export const BOARD_FACTS: Record<BoardType, BoardFacts> = {
  "rpi-gpio": {
    title: "Raspberry Pi (the host's own 40-pin header)",
    chip: "Broadcom BCM2835/6/7, BCM2711 (Pi 4) or BCM2712 + RP1 (Pi 5)",
    architecture: "ARM Cortex-A (armv7l / aarch64 Linux)",
    memoryMap: { ram: "board-dependent (see live facts)" },
    pins: "GPIO 2–27 on the 40-pin header (BCM numbering); I2C1 on GPIO 2/3, SPI0 on GPIO 7–11, UART on GPIO 14/15",
    connection: "local: sysfs GPIO, /dev/i2c-*, /dev/spidev*, /dev/serial0",
    capabilities: { gpio: true, serial: true, i2c: true, spi: true, memory: false },
  },
  "arduino-uno": {
    title: "Arduino Uno R3",
    chip: "ATmega328P @ 16 MHz (USB bridge ATmega16U2)",
    architecture: "AVR 8-bit",
    memoryMap: { flash: "0x0000–0x7FFF (32 KB)", sram: "0x0100–0x08FF (2 KB)", eeprom: "1 KB" },
    pins: "D0–D13 (D0/D1 are the serial line, D13 the LED), A0–A5; 5 V logic",
    connection: "USB serial (JSON lines, docs/hardware-protocol.md); opening the port resets the board",
    capabilities: serialBoard,
  },
  "arduino-uno-q": {
    title: "Arduino Uno Q",
    chip: "Qualcomm QRB2210 (Linux MPU) + STM32U585 (MCU)",
    architecture: "ARM Cortex-A53 (MPU) + Cortex-M33 (MCU)",
    memoryMap: { mcuFlash: "0x08000000 (2 MB)", mcuSram: "0x20000000 (786 KB)" },
    pins: "Uno header D0–D13, A0–A5 on the MCU; 3.3 V logic",
    connection: "serial to the MCU's sketch (JSON lines, docs/hardware-protocol.md)",
    capabilities: serialBoard,
  },
  esp32: {
    title: "ESP32 dev board",
    chip: "Espressif ESP32 (dual-core Xtensa LX6 @ 240 MHz)",
    architecture: "Xtensa 32-bit",
    memoryMap: {
      iram: "0x40080000–0x400A0000",
      dram: "0x3FFB0000–0x40000000 (320 KB)",
      flash: "external, 4 MB typical",
    },
    pins: "GPIO 0–39 (34–39 input only; 6–11 are the flash); 3.3 V logic",
    connection: "USB serial (JSON lines, docs/hardware-protocol.md)",
    capabilities: serialBoard,
  },
  "nucleo-f401re": {
    title: "ST Nucleo-64 F401RE",
    chip: "STM32F401RE @ 84 MHz",
    architecture: "ARM Cortex-M4F",
    memoryMap: {
      flash: "0x08000000–0x0807FFFF (512 KB)",
      sram: "0x20000000–0x20017FFF (96 KB)",
      peripherals: "0x40000000–",
    },
    pins: "Arduino header + morpho; LD2 on PA5; 3.3 V logic",
    connection: "ST-LINK: USB serial (JSON lines) and SWD (probe-rs)",
    probeChip: "STM32F401RETx",
    capabilities: { ...serialBoard, memory: true },
  },
  "nucleo-f411re": {
    title: "ST Nucleo-64 F411RE",
    chip: "STM32F411RE @ 100 MHz",
    architecture: "ARM Cortex-M4F",
    memoryMap: {
      flash: "0x08000000–0x0807FFFF (512 KB)",
      sram: "0x20000000–0x2001FFFF (128 KB)",
      peripherals: "0x40000000–",
    },
    pins: "Arduino header + morpho; LD2 on PA5; 3.3 V logic",
    connection: "ST-LINK: USB serial (JSON lines) and SWD (probe-rs)",
    probeChip: "STM32F411RETx",
    capabilities: { ...serialBoard, memory: true },
  },
};

/** True when the board speaks the JSON-lines protocol over its serial port. */
export function isSerialBoard(board: Pick<BoardConfig, "type">): boolean {
  return SERIAL_BOARD_TYPES.includes(board.type);
}

/** True when any configured board can do `capability`. */
export function anyBoardCan(
  boards: readonly Pick<BoardConfig, "type">[],
  capability: keyof BoardCapabilities,
): boolean {
  return boards.some((board) => BOARD_FACTS[board.type].capabilities[capability]);
}

/** The serial baud rate for a board (115200 unless configured; the Uno sketch uses 115200 too). */
export function boardBaud(board: Pick<BoardConfig, "baud">): number {
  return board.baud ?? 115_200;
}
