import { ToolError } from "../core/tool-error.js";
import { loadNative } from "./native.js";

/** A port found on the box. */
export interface SerialPortInfo {
  path: string;
  manufacturer?: string;
  serialNumber?: string;
  vendorId?: string;
  productId?: string;
}

/** An open serial line. */
export interface SerialStream {
  write(bytes: Buffer): Promise<void>;
  onData(listener: (chunk: Buffer) => void): void;
  /** Called once when the line closes, with the error when it went away (unplugged). */
  onClose(listener: (error: Error | null) => void): void;
  close(): Promise<void>;
}

/** The narrow serial port: lists and opens lines. Real: `serialport` (tests use it over a PTY pair). */
export interface SerialBackend {
  list(): Promise<SerialPortInfo[]>;
  open(path: string, baudRate: number): Promise<SerialStream>;
}

interface NodeSerialPort {
  open(callback: (error: Error | null) => void): void;
  write(data: Buffer, callback: (error: Error | null | undefined) => void): boolean;
  drain(callback: (error: Error | null) => void): void;
  close(callback: (error: Error | null) => void): void;
  on(event: "data", listener: (chunk: Buffer) => void): void;
  on(event: "close", listener: (error: Error | null) => void): void;
  on(event: "error", listener: (error: Error) => void): void;
  readonly isOpen: boolean;
}
interface SerialportModule {
  SerialPort: {
    new (options: { path: string; baudRate: number; autoOpen: boolean; lock?: boolean }): NodeSerialPort;
    list(): Promise<SerialPortInfo[]>;
  };
}

/** The `serialport` module behind the SerialBackend port, loaded on first use. */
export const nodeSerialBackend: SerialBackend = {
  async list() {
    const { SerialPort } = loadNative<SerialportModule>("serialport");
    const ports = await SerialPort.list();
    return ports.map(({ path, manufacturer, serialNumber, vendorId, productId }) => ({
      path,
      ...(manufacturer ? { manufacturer } : {}),
      ...(serialNumber ? { serialNumber } : {}),
      ...(vendorId ? { vendorId } : {}),
      ...(productId ? { productId } : {}),
    }));
  },
  async open(path, baudRate) {
    const { SerialPort } = loadNative<SerialportModule>("serialport");
    const port = new SerialPort({ path, baudRate, autoOpen: false });
    await new Promise<void>((resolve, reject) =>
      port.open((error) => (error ? reject(openFailure(path, error)) : resolve())),
    );
    const closeListeners: Array<(error: Error | null) => void> = [];
    let closed = false;
    const finish = (error: Error | null) => {
      if (closed) return;
      closed = true;
      for (const listener of closeListeners) listener(error);
    };
    port.on("close", (error) => finish(error ?? null));
    port.on("error", (error) => finish(error));
    return {
      write: (bytes) =>
        new Promise((resolve, reject) => {
          port.write(bytes, (error) => {
            if (error) reject(error);
          });
          port.drain((error) => (error ? reject(error) : resolve()));
        }),
      onData: (listener) => port.on("data", listener),
      onClose: (listener) => void closeListeners.push(listener),
      close: () =>
        new Promise((resolve) => {
          if (!port.isOpen) return resolve();
          port.close(() => resolve());
        }),
    };
  },
};

function openFailure(path: string, error: Error): ToolError {
  const message = error.message;
  if (/EACCES|Permission denied/i.test(message))
    return new ToolError(
      "serial.permission_denied",
      `No permission to open ${path}. Add the user to the dialout group (sudo usermod -aG dialout $USER, or SupplementaryGroups=dialout in the systemd unit).`,
    );
  if (/ENOENT|No such file/i.test(message))
    return new ToolError(
      "serial.port_not_found",
      `${path} does not exist. Is the board plugged in? Try action "list".`,
    );
  if (/lock|busy/i.test(message))
    return new ToolError("serial.port_busy", `${path} is in use by another program (${message}).`);
  return new ToolError("serial.open_failed", `Could not open ${path}: ${message}`);
}
