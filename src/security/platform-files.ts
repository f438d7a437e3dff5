import { ToolError } from "../core/tool-error.js";
import { GuardRefusal } from "./guard-refusal.js";
import { type LookupPort, SafeHttpClient } from "./safe-http.js";

/** Largest attachment downloaded (attachment_save refuses bigger ones). */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
const DOWNLOAD_TIMEOUT_MS = 60_000;

export interface PlatformFilesOptions {
  /** "Slack", "Discord", "Telegram": named in refusals. */
  platform: string;
  /** Public file hosts of the platform, reached over https only (e.g. `files.slack.com`). */
  hosts: readonly string[];
  /** The configured platform endpoint (`apiUrl`, `apiBase`, `apiRoot`): its exact origin is the platform too. */
  endpoint?: string;
  /** Credential headers, sent to the platform's hosts only. */
  headers?: Record<string, string>;
  lookup?: LookupPort;
}

/**
 * Downloads attachments from a chat platform's own file host and nowhere else. A URL on any other host (a
 * message can carry any URL) is refused before a connection is made, so the platform's credential never
 * leaves it; the request itself goes through the SSRF guard, which trusts only the configured endpoint's
 * origin (127.0.0.1 when it is a test fake) and judges every redirect, dropping credentials off-origin.
 */
export class PlatformFiles {
  private readonly hosts: Set<string>;
  private readonly endpointOrigin: string | null;
  private readonly http: SafeHttpClient;

  constructor(private readonly options: PlatformFilesOptions) {
    this.hosts = new Set(options.hosts.map((host) => host.toLowerCase()));
    this.endpointOrigin = options.endpoint ? new URL(options.endpoint).origin : null;
    this.http = new SafeHttpClient({
      lookup: options.lookup,
      trustedOrigins: this.endpointOrigin ? [this.endpointOrigin] : [],
    });
  }

  /** The parsed URL when it is on the platform's file host; throws `attachment.foreign_host` otherwise. */
  check(rawUrl: string): URL {
    let url: URL | null = null;
    try {
      url = new URL(rawUrl);
    } catch {
      url = null;
    }
    const onPlatform =
      url !== null &&
      !url.username &&
      !url.password &&
      (url.origin === this.endpointOrigin ||
        (url.protocol === "https:" && url.port === "" && this.hosts.has(url.hostname.toLowerCase())));
    if (!url || !onPlatform) {
      throw new GuardRefusal(
        "attachment.foreign_host",
        `This ${this.options.platform} attachment points at ${url ? url.host : "an invalid URL"}, not at ${this.options.platform}'s own file host (${this.describeHosts()}); it was not downloaded and no credential was sent.`,
      );
    }
    return url;
  }

  /** Downloads `rawUrl` (after `check`), cut at MAX_ATTACHMENT_BYTES. */
  async download(rawUrl: string): Promise<Buffer> {
    const url = this.check(rawUrl);
    const response = await this.http.request({
      url: url.toString(),
      headers: this.options.headers,
      maxResponseBytes: MAX_ATTACHMENT_BYTES,
      timeoutMs: DOWNLOAD_TIMEOUT_MS,
    });
    if (response.status >= 400) {
      throw new ToolError(
        "attachment.download_failed",
        `${this.options.platform} answered HTTP ${response.status} for the attachment.`,
      );
    }
    if (response.truncated) {
      throw new ToolError(
        "attachment.too_large",
        `The attachment is larger than ${MAX_ATTACHMENT_BYTES} bytes; it was not saved.`,
      );
    }
    return response.body;
  }

  private describeHosts(): string {
    return [...this.hosts, ...(this.endpointOrigin ? [this.endpointOrigin] : [])].join(", ");
  }
}
