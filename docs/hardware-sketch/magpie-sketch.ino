// Magpie's JSON-lines protocol for Arduino Uno / Uno Q, ESP32 and STM32 Nucleo boards
// (docs/hardware-protocol.md). One JSON object per line in, one per line out, 115200 baud.
//
//   {"cmd":"ping"}                              -> {"ok":true,"board":"<BOARD_NAME>","version":1}
//   {"cmd":"gpio_mode","pin":13,"mode":"out"}   -> {"ok":true}            (mode: in | out | in_pullup)
//   {"cmd":"gpio_write","pin":13,"value":1}     -> {"ok":true}
//   {"cmd":"gpio_read","pin":2}                 -> {"ok":true,"value":0}
//   {"cmd":"analog_read","pin":0}               -> {"ok":true,"value":512}
//   {"cmd":"mem_read","address":536870912,"length":4}  -> {"ok":true,"data":"0a0b0c0d"}   (length <= 256)
//   {"cmd":"mem_write","address":536870912,"data":"cafe"} -> {"ok":true}
//   anything else                               -> {"ok":false,"error":"..."}
// Lines that are not JSON objects (e.g. "# booted") are chatter: Magpie skips them.
//
// Needs the ArduinoJson library (Library Manager → ArduinoJson, v7).

#include <ArduinoJson.h>

#ifndef BOARD_NAME
#define BOARD_NAME "magpie-sketch"
#endif
#define ENABLE_MEMORY 1  // set to 0 to refuse mem_read/mem_write

static char line[320];
static size_t length = 0;

static void reply(JsonDocument &answer) {
  serializeJson(answer, Serial);
  Serial.print('\n');
}

static void fail(const char *error) {
  JsonDocument answer;
  answer["ok"] = false;
  answer["error"] = error;
  reply(answer);
}

static int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static void handle(const char *text) {
  JsonDocument request;
  if (deserializeJson(request, text)) return fail("not JSON");
  const char *cmd = request["cmd"] | "";
  JsonDocument answer;
  answer["ok"] = true;
  if (!strcmp(cmd, "ping")) {
    answer["board"] = BOARD_NAME;
    answer["version"] = 1;
  } else if (!strcmp(cmd, "gpio_mode")) {
    const char *mode = request["mode"] | "in";
    int pin = request["pin"] | -1;
    if (pin < 0) return fail("pin required");
    pinMode(pin, !strcmp(mode, "out") ? OUTPUT : !strcmp(mode, "in_pullup") ? INPUT_PULLUP : INPUT);
  } else if (!strcmp(cmd, "gpio_write")) {
    int pin = request["pin"] | -1;
    if (pin < 0) return fail("pin required");
    digitalWrite(pin, (request["value"] | 0) ? HIGH : LOW);
  } else if (!strcmp(cmd, "gpio_read")) {
    int pin = request["pin"] | -1;
    if (pin < 0) return fail("pin required");
    answer["value"] = digitalRead(pin) == HIGH ? 1 : 0;
  } else if (!strcmp(cmd, "analog_read")) {
    answer["value"] = analogRead(request["pin"] | 0);
#if ENABLE_MEMORY
  } else if (!strcmp(cmd, "mem_read")) {
    uintptr_t address = request["address"] | 0UL;
    unsigned count = request["length"] | 0;
    if (count < 1 || count > 256) return fail("length must be 1..256");
    String data;
    for (unsigned i = 0; i < count; i++) {
      uint8_t byte = *(volatile uint8_t *)(address + i);
      const char *digits = "0123456789abcdef";
      data += digits[byte >> 4];
      data += digits[byte & 15];
    }
    answer["data"] = data;
  } else if (!strcmp(cmd, "mem_write")) {
    uintptr_t address = request["address"] | 0UL;
    const char *data = request["data"] | "";
    size_t digits = strlen(data);
    if (digits == 0 || digits % 2 || digits > 512) return fail("data must be 1..256 hex bytes");
    for (size_t i = 0; i < digits; i += 2) {
      int high = hexValue(data[i]), low = hexValue(data[i + 1]);
      if (high < 0 || low < 0) return fail("data is not hex");
      *(volatile uint8_t *)(address + i / 2) = (uint8_t)(high * 16 + low);
    }
#endif
  } else {
    return fail("unknown cmd");
  }
  reply(answer);
}

void setup() {
  Serial.begin(115200);
  Serial.println("# " BOARD_NAME " booted");
}

void loop() {
  while (Serial.available()) {
    char c = (char)Serial.read();
    if (c == '\r') continue;
    if (c == '\n') {
      line[length] = '\0';
      if (length > 0) handle(line);
      length = 0;
    } else if (length < sizeof(line) - 1) {
      line[length++] = c;
    } else {
      length = 0;  // overlong line: drop it
      fail("line too long");
    }
  }
}
