/**
 * Short callback ids for platforms that cap them (Telegram: 64 bytes of callback_data). Ids that fit pass
 * through unchanged; longer ones are replaced by `~<n>` keys remembered in memory (the newest 1000).
 */
export class ButtonIdMap {
  private readonly longIds = new Map<string, string>();
  private counter = 0;

  constructor(private readonly maxBytes: number) {}

  encode(buttonId: string): string {
    if (Buffer.byteLength(buttonId) <= this.maxBytes && !buttonId.startsWith("~")) return buttonId;
    const key = `~${(this.counter++).toString(36)}`;
    this.longIds.set(key, buttonId);
    if (this.longIds.size > 1000) this.longIds.delete(this.longIds.keys().next().value!);
    return key;
  }

  decode(data: string): string {
    return this.longIds.get(data) ?? data;
  }
}
