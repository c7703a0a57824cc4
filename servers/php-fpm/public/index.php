<?php
// The front controller: nginx hands every request to this one script (FastCGI), which
// routes it. No framework (no PHP package registry is reachable here): plain PHP 8.2.
declare(strict_types=1);

require __DIR__ . '/../src/contract.php';

// Anything unexpected (a database error) is a JSON 500 and one line in the harness's log
// (display_errors is off, as in production; log_errors goes to PHP-FPM's stderr).
set_exception_handler(function (Throwable $e): void {
    error_log(get_class($e) . ': ' . $e->getMessage());
    if (!headers_sent()) {
        send_error(500, 'internal error');
    }
});

$uri = $_SERVER['REQUEST_URI'];
$cut = strpos($uri, '?');
$path = $cut === false ? $uri : substr($uri, 0, $cut);
$method = $_SERVER['REQUEST_METHOD'];

if ($path === '/ping/') {
    if ($method !== 'GET' && $method !== 'HEAD') {
        send_error(405, 'method not allowed', 'GET, HEAD');
        return;
    }
    send_json(200, ['server' => getenv('BENCH_SERVER_ID'), 'database' => getenv('BENCH_DB'),
                    'orm' => false]);
    return;
}

// which routes exist, and the methods each answers; anything else is a JSON 404
if ($path === '/plain/' || $path === '/to_json/' || $path === '/queries/'
    || $path === '/updates/' || $path === '/fortunes/' || $path === '/cached/' || $path === '/delay/') {
    $methods = ['GET', 'HEAD'];
    $id_text = null;
} elseif ($path === '/upload/') {
    $methods = ['POST'];
    $id_text = null;
} elseif (str_starts_with($path, '/user/') && str_ends_with($path, '/') && strlen($path) > 7
          && strpos($path, '/', 6) === strlen($path) - 1) {
    $methods = ['GET', 'HEAD', 'PATCH'];
    $id_text = substr($path, 6, -1);
} else {
    send_error(404, 'not found');
    return;
}

// the token first on every route but /ping/ (constant-time comparison)
$token = $_SERVER['HTTP_TOKEN'] ?? null;
if (!is_string($token) || !hash_equals(getenv('BENCH_TOKEN'), $token)) {
    send_error(401, 'missing or wrong token');
    return;
}
if (!in_array($method, $methods, true)) {
    send_error(405, 'method not allowed', implode(', ', $methods));
    return;
}

// the HTTP workloads: no database either
if ($path === '/upload/') {
    // nginx has the whole body by now (and refused one over 8 MiB with a 413 itself);
    // it is read from php://input through the CRC-32, the limit checked again here
    $answer = upload_answer(fopen('php://input', 'rb'));
    if ($answer === null) {
        send_error(413, 'body too large (max ' . MAX_UPLOAD . ' bytes)');
    } else {
        send_json(200, $answer);
    }
    return;
}
if ($path === '/delay/') {
    usleep(DELAY_US);                       // this child sleeps: one request per child
    header('Content-Type: text/plain; charset=utf-8');
    echo DELAY_BODY;
    return;
}

if ($path === '/plain/' || $path === '/to_json/') {
    $q = query_params($_SERVER['QUERY_STRING'] ?? '');
    if ($path === '/plain/') {
        header('Content-Type: text/plain; charset=utf-8');
        echo 'param1=', $q['param1'] ?? '', ', param2=', $q['param2'] ?? '', ', param3=', $q['param3'] ?? '';
    } else {
        send_json(200, ['param1' => $q['param1'] ?? null, 'param2' => $q['param2'] ?? null,
                        'param3' => $q['param3'] ?? null]);
    }
    return;
}

if (getenv('BENCH_DB') === 'none') {
    send_error(404, 'no database');
    return;
}
require __DIR__ . '/../src/db.php';

if ($id_text !== null) {
    $id = parse_user_id($id_text);
    if ($id === null) {
        send_error(404, 'user not found');
        return;
    }
    if ($method === 'PATCH') {
        $body = parse_patch_body((string) file_get_contents('php://input', false, null, 0, MAX_BODY + 1));
        if (is_string($body)) {
            send_error(400, $body);
            return;
        }
        $user = update_user($id, $body[0], $body[1]);
    } else {
        $user = get_user($id);
    }
    if ($user === null) {
        send_error(404, 'user not found');
    } else {
        send_json(200, $user);
    }
    return;
}

if ($path === '/fortunes/') {
    $fortunes = fortunes();
    $fortunes[0] = 'A fortune added at request time.';
    asort($fortunes, SORT_STRING);          // byte order of UTF-8 = code-point order
    header('Content-Type: text/html; charset=utf-8');
    require __DIR__ . '/../templates/fortunes.php';
    return;
}

$n = parse_count(query_params($_SERVER['QUERY_STRING'] ?? '')['n'] ?? null);
send_json(200, match ($path) {
    '/queries/' => query_users(random_ids($n)),
    '/updates/' => update_users(distinct_ids($n)),
    '/cached/' => cached_users(random_ids($n)),
});
