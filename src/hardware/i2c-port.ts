/** One opened I2C bus (addresses are 7-bit). */
export interface I2cBus {
  /** Addresses that acknowledge, within [first, last]. */
  scan(first: number, last: number): Promise<number[]>;
  read(address: number, length: number): Promise<Buffer>;
  write(address: number, bytes: Buffer): Promise<void>;
  readRegister(address: number, register: number, length: number): Promise<Buffer>;
  writeRegister(address: number, register: number, bytes: Buffer): Promise<void>;
  close(): Promise<void>;
}

/** The narrow I2C port: which buses exist, and opening one. Real: i2c-bus; tests: `MemoryI2c`. */
export interface I2cPort {
  buses(): number[];
  open(bus: number): Promise<I2cBus>;
}

/** In-memory I2C buses for tests: devices are 256-byte register files with a register pointer. */
export class MemoryI2c implements I2cPort {
  /** bus → address → registers */
  readonly devices = new Map<number, Map<number, Uint8Array>>();

  /** Adds a device answering at `address` on `bus`, with initial registers. */
  addDevice(bus: number, address: number, registers: Record<number, number> = {}): Uint8Array {
    const memory = new Uint8Array(256);
    for (const [register, value] of Object.entries(registers)) memory[Number(register)] = value;
    const devices = this.devices.get(bus) ?? new Map<number, Uint8Array>();
    devices.set(address, memory);
    this.devices.set(bus, devices);
    return memory;
  }

  buses(): number[] {
    return [...this.devices.keys()].sort((a, b) => a - b);
  }

  async open(bus: number): Promise<I2cBus> {
    const devices = this.devices.get(bus);
    if (!devices) throw Object.assign(new Error(`ENOENT: /dev/i2c-${bus}`), { code: "ENOENT" });
    const pointers = new Map<number, number>();
    const device = (address: number) => {
      const memory = devices.get(address);
      if (!memory)
        throw Object.assign(new Error(`Remote I/O error (no ACK from 0x${address.toString(16)})`), {
          code: "EREMOTEIO",
        });
      return memory;
    };
    const readFrom = (address: number, start: number, length: number) => {
      const memory = device(address);
      const bytes = Buffer.alloc(length);
      for (let index = 0; index < length; index++) bytes[index] = memory[(start + index) % 256] ?? 0;
      pointers.set(address, (start + length) % 256);
      return bytes;
    };
    const writeTo = (address: number, start: number, bytes: Buffer) => {
      const memory = device(address);
      bytes.forEach((byte, index) => {
        memory[(start + index) % 256] = byte;
      });
      pointers.set(address, (start + bytes.length) % 256);
    };
    return {
      scan: async (first, last) =>
        [...devices.keys()].filter((address) => address >= first && address <= last).sort((a, b) => a - b),
      read: async (address, length) => readFrom(address, pointers.get(address) ?? 0, length),
      // A plain write's first byte sets the register pointer, like most register-file chips.
      write: async (address, bytes) => writeTo(address, bytes[0] ?? 0, bytes.subarray(1)),
      readRegister: async (address, register, length) => readFrom(address, register, length),
      writeRegister: async (address, register, bytes) => writeTo(address, register, bytes),
      close: async () => undefined,
    };
  }
}
