package webbench.vertx;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonObject;
import java.util.concurrent.ThreadLocalRandom;
import java.util.zip.CRC32;

/**
 * The parts of the contract that depend on neither the router nor the driver: the path
 * id, the PATCH body, the suite's n and ids, the fortunes' order, the error bodies, the
 * upload's checksum.
 * Pure functions.
 */
final class Contract {
  private Contract() {}

  static final int MAX_TEXT = 256; // varchar(256): both engines count code points
  static final int MAX_BODY = 64 * 1024; // the largest PATCH body read
  static final int MAX_UPLOAD = 8 * 1024 * 1024; // the largest /upload/ body: 8 MiB
  static final long DELAY_MS = 10; // /delay/'s wait
  static final int N_MAX = 500;
  static final int ROW_COUNT = 10_000; // users.user_id is 1..10000
  static final int MAX_RANDOM_NUMBER = 1_000_000; // /updates/ usernames: "u" + 1..1000000
  static final String EXTRA_FORTUNE = "A fortune added at request time.";

  static final String JSON_TYPE = "application/json";
  static final String TEXT_TYPE = "text/plain; charset=utf-8";
  static final String HTML_TYPE = "text/html; charset=utf-8";

  // The contract's error bodies, serialised once.
  static final Buffer INVALID_TOKEN = error("invalid token");
  static final Buffer NOT_FOUND = error("not found");
  static final Buffer NO_DATABASE = error("no database");
  static final Buffer METHOD_NOT_ALLOWED = error("method not allowed");
  static final Buffer DATABASE_ERROR = error("database error");
  static final Buffer INTERNAL_ERROR = error("internal error");
  static final Buffer BODY_TOO_LARGE = error("body too large");
  static final Buffer NOT_WEBSOCKET = error("not a websocket upgrade");
  static final Buffer DELAYED = Buffer.buffer("delayed 10 ms");

  static Buffer error(String reason) {
    return new JsonObject().put("error", reason).toBuffer();
  }

  /**
   * /upload/'s answer for a body: {"bytes": N, "crc32": "8 lowercase hex digits"}, the
   * CRC-32 of IEEE 802.3 (java.util.zip.CRC32, as zlib's crc32). `scratch` is the
   * caller's reusable copy buffer: the body is read through it in slices with Buffer's
   * public API (no copy of the whole body).
   */
  static Buffer upload(Buffer body, byte[] scratch) {
    CRC32 crc = new CRC32();
    int length = body == null ? 0 : body.length();
    for (int start = 0; start < length; start += scratch.length) {
      int end = Math.min(length, start + scratch.length);
      body.getBytes(start, end, scratch);
      crc.update(scratch, 0, end - start);
    }
    return new JsonObject().put("bytes", length).put("crc32", hex8(crc.getValue())).toBuffer();
  }

  /** A 32-bit value as exactly 8 lowercase hex digits. */
  static String hex8(long value) {
    String hex = Long.toHexString(value & 0xFFFF_FFFFL);
    return "00000000".substring(hex.length()) + hex;
  }

  /** Path id: 1 to 10 ASCII digits with a value in 1..2147483647, else -1 (a 404). */
  static int parseUserId(String raw) {
    if (raw == null || raw.isEmpty() || raw.length() > 10) {
      return -1;
    }
    long value = 0;
    for (int i = 0; i < raw.length(); i++) {
      char c = raw.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      value = value * 10 + (c - '0');
    }
    return value >= 1 && value <= Integer.MAX_VALUE ? (int) value : -1;
  }

  /** A PATCH body that passed validation. */
  record Patch(String username, String email) {}

  /** The validated body, or the short reason it is a 400 (thrown). */
  static final class BadBody extends Exception {
    BadBody(String reason) {
      super(reason, null, false, false);
    }
  }

  /**
   * The raw PATCH body, whatever its Content-Type: a JSON object with "username"
   * (non-empty string) and "email" (string), at most 256 code points each, no NUL, no
   * lone surrogate (it has no UTF-8 form: the driver would store '?'); other keys are
   * ignored. Jackson refuses bytes that are not UTF-8.
   */
  static Patch parsePatch(Buffer body) throws BadBody {
    if (body == null || body.length() == 0) {
      throw new BadBody("body is not valid JSON");
    }
    Object data;
    try {
      data = Json.decodeValue(body);
    } catch (DecodeException | IllegalStateException e) {
      throw new BadBody("body is not valid JSON");
    }
    if (!(data instanceof JsonObject object)) {
      throw new BadBody("body must be a JSON object");
    }
    if (!object.containsKey("username") || !object.containsKey("email")) {
      throw new BadBody("username and email are required");
    }
    String username = text(object.getValue("username"), false, "username");
    String email = text(object.getValue("email"), true, "email");
    return new Patch(username, email);
  }

  private static String text(Object value, boolean allowEmpty, String name) throws BadBody {
    if (!(value instanceof String s)) {
      throw new BadBody(name + " must be a string");
    }
    if (s.isEmpty() && !allowEmpty) {
      throw new BadBody(name + " must not be empty");
    }
    if (s.length() > MAX_TEXT && s.codePointCount(0, s.length()) > MAX_TEXT) {
      throw new BadBody(name + " is longer than " + MAX_TEXT + " characters");
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == 0) {
        throw new BadBody(name + " contains a NUL character");
      }
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
          continue;
        }
        throw new BadBody(name + " is not valid Unicode text");
      }
      if (Character.isLowSurrogate(c)) {
        throw new BadBody(name + " is not valid Unicode text");
      }
    }
    return s;
  }

  /**
   * The suite's n (first occurrence of the query parameter): ASCII digits only, clamped
   * to 1..500; missing, empty or anything else is 1. Digits are accumulated only up to
   * 500, so a long digit string is 500, never an overflow.
   */
  static int parseCount(String raw) {
    if (raw == null || raw.isEmpty()) {
      return 1;
    }
    int n = 0;
    for (int i = 0; i < raw.length(); i++) {
      char c = raw.charAt(i);
      if (c < '0' || c > '9') {
        return 1;
      }
      if (n <= N_MAX) {
        n = n * 10 + (c - '0');
      }
    }
    return n == 0 ? 1 : Math.min(n, N_MAX);
  }

  /** A user id drawn uniformly from 1..10000. */
  static int randomId() {
    return 1 + ThreadLocalRandom.current().nextInt(ROW_COUNT);
  }

  /** `n` distinct ids (n <= 500 of 10000: a few redraws at most), ascending. */
  static int[] distinctSortedIds(int n) {
    java.util.BitSet seen = new java.util.BitSet(ROW_COUNT + 1);
    int count = 0;
    while (count < n) {
      int id = randomId();
      if (!seen.get(id)) {
        seen.set(id);
        count++;
      }
    }
    int[] ids = new int[n];
    for (int i = 0, id = seen.nextSetBit(0); id >= 0; id = seen.nextSetBit(id + 1)) {
      ids[i++] = id;
    }
    return ids;
  }

  /** The username /updates/ writes: "u" + a random integer 1..1000000. */
  static String randomUsername() {
    return "u" + (1 + ThreadLocalRandom.current().nextInt(MAX_RANDOM_NUMBER));
  }

  /**
   * Code-point order. String.compareTo compares UTF-16 units, which differs from
   * code-point order only where one string has a surrogate and the other a unit in
   * U+E000..U+FFFF at the first difference; the order here is exact anyway.
   */
  static int compareCodePoints(String a, String b) {
    int n = Math.min(a.length(), b.length());
    for (int i = 0; i < n; i++) {
      int x = a.charAt(i);
      int y = b.charAt(i);
      if (x == y) {
        continue;
      }
      // surrogates (D800..DFFF) move above E000..FFFF
      if (x >= 0xD800) {
        x += x < 0xE000 ? 0x2000 : -0x800;
      }
      if (y >= 0xD800) {
        y += y < 0xE000 ? 0x2000 : -0x800;
      }
      return x - y;
    }
    return a.length() - b.length();
  }
}
