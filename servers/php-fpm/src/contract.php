<?php
// The parts of the HTTP contract that depend on no database: answers, the token, the
// query string, the path id, the PATCH body, the suite's n and ids. Plain functions,
// compiled once by OPcache; every request runs public/index.php, which requires this.
declare(strict_types=1);

const MAX_TEXT = 256;              // varchar(256): both engines count code points
const MAX_USER_ID = 2147483647;    // integer / INT
const MAX_BODY = 65536;            // PATCH bodies above 64 KiB are refused unparsed
const MAX_UPLOAD = 8388608;        // /upload/: 8 MiB accepted, one byte more is a 413
const DELAY_US = 10000;            // /delay/: 10 ms
const DELAY_BODY = 'delayed 10 ms';
const N_MAX = 500;
const ROW_COUNT = 10000;           // users.user_id is 1..10000
const JSON_FLAGS = JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_INVALID_UTF8_SUBSTITUTE;

/** Send a JSON answer (the body is encoded once, compactly). */
function send_json(int $status, mixed $value): void
{
    http_response_code($status);
    header('Content-Type: application/json');
    echo json_encode($value, JSON_FLAGS | JSON_THROW_ON_ERROR);
}

/** {"error": reason}, with an Allow header for a 405. */
function send_error(int $status, string $reason, ?string $allow = null): void
{
    if ($allow !== null) {
        header('Allow: ' . $allow);
    }
    send_json($status, ['error' => $reason]);
}

/**
 * /upload/'s answer for the body readable from $stream (php://input): its length and
 * CRC-32 (hash 'crc32b' is zlib's CRC-32, as Python's zlib.crc32), read through the hash
 * in hash_update_stream's blocks, never held whole; null when it is longer than $limit
 * bytes (only $limit + 1 of them are read).
 */
function upload_answer($stream, int $limit = MAX_UPLOAD): ?array
{
    $crc = hash_init('crc32b');
    $bytes = hash_update_stream($crc, $stream, $limit + 1);
    if ($bytes > $limit) {
        return null;
    }
    return ['bytes' => $bytes, 'crc32' => hash_final($crc)];
}

/**
 * The query string's parameters, first occurrence wins, names and values percent-decoded
 * with + as a space (urldecode; an invalid escape is kept as written). Not $_GET: PHP's
 * parser keeps the last occurrence, turns `a[]=` into arrays and `.`/` ` in names into `_`.
 */
function query_params(string $query): array
{
    $out = [];
    if ($query === '') {
        return $out;
    }
    foreach (explode('&', $query) as $pair) {
        if ($pair === '') {
            continue;
        }
        $eq = strpos($pair, '=');
        $name = urldecode($eq === false ? $pair : substr($pair, 0, $eq));
        if (!array_key_exists($name, $out)) {
            $out[$name] = $eq === false ? '' : urldecode(substr($pair, $eq + 1));
        }
    }
    return $out;
}

/** Path id: 1 to 10 ASCII digits, 1..2147483647, else null (-> 404). */
function parse_user_id(string $raw): ?int
{
    if ($raw === '' || strlen($raw) > 10 || strspn($raw, '0123456789') !== strlen($raw)) {
        return null;
    }
    $id = (int) $raw;
    return $id >= 1 && $id <= MAX_USER_ID ? $id : null;
}

/** The suite's n: ASCII digits clamped to 1..500; missing, empty or anything else is 1. */
function parse_count(?string $raw): int
{
    if ($raw === null || $raw === '' || strspn($raw, '0123456789') !== strlen($raw)) {
        return 1;
    }
    $digits = ltrim($raw, '0');
    if ($digits === '') {
        return 1;
    }
    return strlen($digits) > 3 ? N_MAX : max(1, min((int) $digits, N_MAX));
}

/** Why `value` cannot be stored in a varchar(256) column, or null if it can. */
function text_problem(mixed $value, bool $allow_empty): ?string
{
    if (!is_string($value)) {
        return 'must be a string';
    }
    if ($value === '' && !$allow_empty) {
        return 'must not be empty';
    }
    // json_decode has already refused invalid UTF-8 and lone surrogates; a string of at
    // most 256 bytes has at most 256 code points, so only a longer one is counted
    if (strlen($value) > MAX_TEXT && iconv_strlen($value, 'UTF-8') > MAX_TEXT) {
        return 'longer than ' . MAX_TEXT . ' characters';
    }
    if (str_contains($value, "\0")) {
        return 'contains a NUL character';
    }
    return null;
}

/**
 * The raw PATCH body -> [username, email], or a string: the short reason it is a 400.
 * A JSON object with "username" (non-empty string) and "email" (string), at most 256
 * characters each; other keys are ignored.
 */
function parse_patch_body(string $body): array|string
{
    if (strlen($body) > MAX_BODY) {
        return 'body too large';
    }
    try {
        // to arrays, not stdClass: PHP cannot make an object property of a key that
        // starts with NUL ("\u0000" is a valid JSON key), which the contract ignores
        $data = json_decode($body, true, 64, JSON_THROW_ON_ERROR);
    } catch (JsonException) {
        return 'body is not valid JSON';
    }
    // {} and [] both decode to an empty array: the text tells an object from an array
    if (!is_array($data) || ltrim($body, " \t\n\r")[0] !== '{') {
        return 'body must be a JSON object';
    }
    if (!array_key_exists('username', $data) || !array_key_exists('email', $data)) {
        return 'username and email are required';
    }
    $problem = text_problem($data['username'], false);
    if ($problem !== null) {
        return "username $problem";
    }
    $problem = text_problem($data['email'], true);
    if ($problem !== null) {
        return "email $problem";
    }
    return [$data['username'], $data['email']];
}

/** `n` ids drawn uniformly from 1..10000 (repeats allowed). */
function random_ids(int $n): array
{
    $ids = [];
    for ($i = 0; $i < $n; $i++) {
        $ids[] = mt_rand(1, ROW_COUNT);
    }
    return $ids;
}

/** `n` distinct ids (n <= 500 of 10000: a few redraws at most). */
function distinct_ids(int $n): array
{
    $ids = [];
    while (count($ids) < $n) {
        $ids[mt_rand(1, ROW_COUNT)] = true;
    }
    return array_keys($ids);
}
