/** SPI transfer settings. */
export interface SpiSettings {
  mode: 0 | 1 | 2 | 3;
  speedHz: number;
  bitsPerWord: number;
}

/** One opened SPI device: a full-duplex transfer returns as many bytes as it sends. */
export interface SpiDevice {
  transfer(bytes: Buffer, settings: SpiSettings): Promise<Buffer>;
  close(): Promise<void>;
}

/** The narrow SPI port: which devices exist, and opening one. Real: spi-device; tests: `MemorySpi`. */
export interface SpiPort {
  devices(): string[];
  open(path: string): Promise<SpiDevice>;
}

/** In-memory SPI for tests: every device echoes what it receives (MISO wired to MOSI); transfers recorded. */
export class MemorySpi implements SpiPort {
  readonly transfers: Array<{ path: string; sent: Buffer; settings: SpiSettings }> = [];

  constructor(private readonly paths: string[] = ["/dev/spidev0.0", "/dev/spidev0.1"]) {}

  devices(): string[] {
    return [...this.paths];
  }

  async open(path: string): Promise<SpiDevice> {
    if (!this.paths.includes(path)) throw Object.assign(new Error(`ENOENT: ${path}`), { code: "ENOENT" });
    return {
      transfer: async (bytes, settings) => {
        this.transfers.push({ path, sent: Buffer.from(bytes), settings });
        return Buffer.from(bytes);
      },
      close: async () => undefined,
    };
  }
}
