<?php
// The server's own unit tests, without a database or a web server: the contract's
// parsing (query strings, ids, n, PATCH bodies), the timestamps and the fortunes
// template's escaping. Plain PHP (no PHPUnit: no package registry reachable):
//     php servers/php-fpm/tests/run.php      -> "N passed, M failed", exit 1 on a failure
declare(strict_types=1);

require __DIR__ . '/../src/contract.php';
require __DIR__ . '/../src/db.php';

$passed = 0;
$failed = 0;
function check(string $what, mixed $got, mixed $want): void
{
    global $passed, $failed;
    if ($got === $want) {
        $passed++;
    } else {
        $failed++;
        fwrite(STDERR, "FAIL $what: got " . var_export($got, true) . ', want ' . var_export($want, true) . "\n");
    }
}

// query strings: first occurrence wins, + is a space, escapes decoded, no PHP mangling
$q = query_params('param1=a%20b&param2=%C3%A9t%C3%A9&param3=%26%3D%2C&param1=zz');
check('decoding', [$q['param1'], $q['param2'], $q['param3']], ['a b', 'été', '&=,']);
check('plus', query_params('p=x+y')['p'], 'x y');
check('no value', query_params('param1&param2=')['param1'], '');
check('missing', query_params('param1=a')['param2'] ?? null, null);
check('names kept', array_keys(query_params('a.b=1&a[]=2')), ['a.b', 'a[]']);
check('bad escape kept', query_params('p=%zz')['p'], '%zz');
check('empty', query_params(''), []);

// path ids
foreach (['1' => 1, '10000' => 10000, '2147483647' => 2147483647, '0' => null, '-1' => null,
          'abc' => null, '2147483648' => null, '99999999999' => null, '' => null, '1 ' => null,
          '+1' => null, '0x1' => null] as $raw => $want) {
    check("id '$raw'", parse_user_id((string) $raw), $want);
}

// the suite's n
foreach ([[null, 1], ['', 1], ['abc', 1], ['0', 1], ['-3', 1], ['1.5', 1], ['7', 7], ['007', 7],
          ['500', 500], ['501', 500], ['99999999999999999999', 500], [' 1', 1]] as [$raw, $want]) {
    check('n ' . var_export($raw, true), parse_count($raw), $want);
}

// PATCH bodies
check('ok body', parse_patch_body('{"username": "a", "email": "", "x": 1}'), ['a', '']);
foreach (['not json', '', '[]', '{}', '{"username": "x"}', '{"email": "e"}', '{"username": 1, "email": "e"}',
          '{"username": "x", "email": null}', '{"username": ["x"], "email": "e"}', '{"username": "", "email": "e"}',
          '{"username": "x\u0000", "email": "e"}', '{"username": "\ud800", "email": "e"}', "{\"username\": \"\xff\", \"email\": \"e\"}",
          '{"username": "' . str_repeat('u', 257) . '", "email": "e"}', str_repeat('[', 100) . str_repeat(']', 100),
          '{"username": "x", "email": "' . str_repeat('e', 70000) . '"}'] as $body) {
    check('refused ' . substr($body, 0, 40), is_string(parse_patch_body($body)), true);
}
check('NUL key ignored', parse_patch_body('{"\\u0000": 1, "username": "a", "email": "b"}'), ['a', 'b']);
check('array refused', parse_patch_body(' [{"username": "a", "email": "b"}]'), 'body must be a JSON object');
check('256 code points', parse_patch_body('{"username": "' . str_repeat('é', 256) . '", "email": "e"}'),
      [str_repeat('é', 256), 'e']);

// ids for the suite
$ids = distinct_ids(500);
check('distinct', count(array_unique($ids)), 500);
check('in range', min($ids) >= 1 && max($ids) <= ROW_COUNT, true);
check('random ids', count(random_ids(20)), 20);

// timestamps as RFC 3339
check('pg', rfc3339('2024-01-01 00:00:01+00'), '2024-01-01T00:00:01Z');
check('pg micro', rfc3339('2024-01-01 00:00:01.123456+00'), '2024-01-01T00:00:01.123456Z');
check('pg offset', rfc3339('2024-01-01 00:00:01+05:30'), '2024-01-01T00:00:01+05:30');
check('mysql', rfc3339('2024-01-01 00:00:01.000000'), '2024-01-01T00:00:01.000000Z');
check('user', user_of(['user_id' => 7, 'username' => 'u', 'email' => null, 'created_at' => '2024-01-01 00:00:07+00',
                        'updated_at' => '2024-01-01 00:00:07+00', 'is_archived' => 0])['is_archived'], false);

// the fortunes template escapes every message
$fortunes = [2 => '<script>alert("escape me")</script>', 3 => "Tom & Jerry's", 0 => 'A fortune added at request time.'];
ob_start();
require __DIR__ . '/../templates/fortunes.php';
$page = ob_get_clean();
check('no raw script', str_contains($page, '<script>'), false);
check('escaped', str_contains($page, '<td>&lt;script&gt;alert(&quot;escape me&quot;)&lt;/script&gt;</td>'), true);
check('quote', str_contains($page, 'Tom &amp; Jerry&apos;s'), true);
check('doctype', str_starts_with($page, '<!DOCTYPE html>'), true);

// /upload/'s answer: length and zlib's CRC-32, streamed, the limit
function memory_stream(string $bytes)
{
    $stream = fopen('php://memory', 'w+b');
    fwrite($stream, $bytes);
    rewind($stream);
    return $stream;
}
check('crc32 check value', upload_answer(memory_stream('123456789')), ['bytes' => 9, 'crc32' => 'cbf43926']);
check('crc32 empty', upload_answer(memory_stream('')), ['bytes' => 0, 'crc32' => '00000000']);
check('crc32 leading zero', upload_answer(memory_stream('33')), ['bytes' => 2, 'crc32' => '0a6216d9']);
$big = str_repeat("webbench\x00\xff\n", intdiv(MAX_UPLOAD, 11)) . str_repeat('x', MAX_UPLOAD % 11);
check('8 MiB accepted', upload_answer(memory_stream($big)), ['bytes' => MAX_UPLOAD, 'crc32' => hash('crc32b', $big)]);
check('8 MiB + 1 refused', upload_answer(memory_stream($big . 'x')), null);
check('limit', upload_answer(memory_stream('abcd'), 3), null);
check('delay body', DELAY_BODY, 'delayed 10 ms');
check('delay', DELAY_US, 10000);

echo "$passed passed, $failed failed\n";
exit($failed === 0 ? 0 : 1);
