<?php
// The database: one persistent PDO connection per PHP-FPM child (PDO::ATTR_PERSISTENT),
// opened by the child's first request that needs it and reused by every later one, and
// the raw statements of the contract and its suite, the same shapes as the sibling raw
// servers (servers/_jscommon/db.js, servers/_gocommon). Values are always bound.
declare(strict_types=1);

const COLUMNS = 'user_id, username, email, created_at, updated_at, is_archived';
const PG = [
    'get' => 'SELECT ' . COLUMNS . ' FROM users WHERE user_id = ?',
    // one statement: RETURNING answers the row as stored after the update
    'update' => 'UPDATE users SET username = ?, email = ?, updated_at = now() WHERE user_id = ? RETURNING ' . COLUMNS,
    'suite_update' => 'UPDATE users SET username = ?, updated_at = ? WHERE user_id = ?',
    'fortunes' => 'SELECT id, message FROM fortune',
];
const MY = [
    'get' => 'SELECT ' . COLUMNS . ' FROM users WHERE user_id = ?',
    // no UPDATE ... RETURNING in MySQL/MariaDB: one UPDATE, then one SELECT; the column
    // holds UTC whatever the session's time zone
    'update' => 'UPDATE users SET username = ?, email = ?, updated_at = UTC_TIMESTAMP(6) WHERE user_id = ?',
    'suite_update' => 'UPDATE users SET username = ?, updated_at = ? WHERE user_id = ?',
    'fortunes' => 'SELECT id, message FROM fortune',
];

/** This request's handle on the child's persistent connection (one per child and DSN). */
function db(): PDO
{
    static $pdo = null;        // statics live for one request; the connection outlives it
    if ($pdo !== null) {
        return $pdo;
    }
    $engine = getenv('BENCH_DB');
    $host = getenv('BENCH_DB_HOST');
    $port = getenv('BENCH_DB_PORT');
    $name = getenv('BENCH_DB_NAME');
    $options = [
        PDO::ATTR_PERSISTENT => true,
        PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
        PDO::ATTR_DEFAULT_FETCH_MODE => PDO::FETCH_ASSOC,
        PDO::ATTR_STRINGIFY_FETCHES => false,
        // server-side prepared statements (Laravel's connector sets this for every
        // driver; PDO's own default for pgsql); PDO_EMULATE_PREPARES=1 turns on
        // PDO's client-side emulation (PDO's own default for mysql), for a comparison
        PDO::ATTR_EMULATE_PREPARES => getenv('PDO_EMULATE_PREPARES') === '1',
    ];
    if ($engine === 'postgres') {
        // TimeZone=UTC as a startup parameter (no SET statement): timestamptz as UTC text
        $dsn = "pgsql:host=$host;port=$port;dbname=$name;sslmode=disable;"
            . "application_name=webbench-php-fpm;options='-c TimeZone=UTC'";
    } else {
        $dsn = "mysql:host=$host;port=$port;dbname=$name;charset=utf8mb4";
        // an UPDATE's row count is the rows matched, not changed: 0 means no such user
        $options[PDO::MYSQL_ATTR_FOUND_ROWS] = true;
    }
    $pdo = new PDO($dsn, getenv('BENCH_DB_USER'), getenv('BENCH_DB_PASSWORD') ?: null, $options);
    return $pdo;
}

function sql(string $which): string
{
    return getenv('BENCH_DB') === 'postgres' ? PG[$which] : MY[$which];
}

/** A timestamp column as RFC 3339 (UTC, microseconds kept). */
function rfc3339(string $text): string
{
    // PostgreSQL (TimeZone=UTC): '2024-01-01 00:00:01.5+00'; MariaDB DATETIME(6), UTC by
    // the contract: '2024-01-01 00:00:01.500000'
    $text[10] = 'T';
    if (str_ends_with($text, '+00')) {
        return substr($text, 0, -3) . 'Z';
    }
    return preg_match('/[+-]\d\d(:\d\d)?$/', $text) ? $text : $text . 'Z';
}

/** A users row -> the contract's user object (exactly these six keys). */
function user_of(array $row): array
{
    return [
        'user_id' => (int) $row['user_id'],
        'username' => $row['username'],
        'email' => $row['email'],
        'created_at' => rfc3339($row['created_at']),
        'updated_at' => rfc3339($row['updated_at']),
        'is_archived' => $row['is_archived'] === true || $row['is_archived'] === 1
            || $row['is_archived'] === '1' || $row['is_archived'] === 't',
    ];
}

/** One SELECT by primary key on an already prepared statement. */
function fetch_user(PDOStatement $get, int $id): ?array
{
    $get->bindValue(1, $id, PDO::PARAM_INT);
    $get->execute();
    $row = $get->fetch();
    $get->closeCursor();
    return $row === false ? null : user_of($row);
}

function get_user(int $id): ?array
{
    return fetch_user(db()->prepare(sql('get')), $id);
}

/** PATCH: one UPDATE (PostgreSQL: ... RETURNING; MariaDB: then one SELECT). */
function update_user(int $id, string $username, string $email): ?array
{
    $update = db()->prepare(sql('update'));
    $update->bindValue(1, $username);
    $update->bindValue(2, $email);
    $update->bindValue(3, $id, PDO::PARAM_INT);
    $update->execute();
    if (getenv('BENCH_DB') === 'postgres') {
        $row = $update->fetch();
        return $row === false ? null : user_of($row);
    }
    if ($update->rowCount() === 0) {
        return null;                  // unknown user: 404 without a SELECT
    }
    return get_user($id);
}

/** /queries/: n SELECTs by primary key, one after another, on one prepared statement. */
function query_users(array $ids): array
{
    $get = db()->prepare(sql('get'));
    $out = [];
    foreach ($ids as $id) {
        $out[] = fetch_user($get, $id);
    }
    return $out;
}

/**
 * /updates/: the rows read (n SELECTs), then n single-row UPDATEs in ascending id order,
 * autocommit; username 'u' + 1..1000000, updated_at the server's UTC time, bound.
 */
function update_users(array $ids): array
{
    $pdo = db();
    $rows = query_users($ids);
    usort($rows, fn ($a, $b) => $a['user_id'] <=> $b['user_id']);
    $now = new DateTimeImmutable('now', new DateTimeZone('UTC'));
    $stamp = $now->format(getenv('BENCH_DB') === 'postgres' ? 'Y-m-d H:i:s.uP' : 'Y-m-d H:i:s.u');
    $answered = $now->format('Y-m-d\TH:i:s.u\Z');
    $update = $pdo->prepare(sql('suite_update'));
    foreach ($rows as $i => $row) {
        $username = 'u' . mt_rand(1, 1000000);
        $update->bindValue(1, $username);
        $update->bindValue(2, $stamp);
        $update->bindValue(3, $row['user_id'], PDO::PARAM_INT);
        $update->execute();
        $rows[$i]['username'] = $username;
        $rows[$i]['updated_at'] = $answered;
    }
    return $rows;
}

/** /fortunes/: the whole table in one SELECT, as id => message. */
function fortunes(): array
{
    return db()->query(sql('fortunes'))->fetchAll(PDO::FETCH_KEY_PAIR);
}

/**
 * /cached/: the users from APCu (shared memory of the PHP-FPM master, so one cache for
 * every child), a miss read with one SELECT by primary key and stored without expiry.
 */
function cached_users(array $ids): array
{
    $keys = [];
    foreach ($ids as $id) {
        $keys[] = "user:$id";
    }
    $hits = apcu_fetch(array_unique($keys));
    $get = null;
    $out = [];
    foreach ($ids as $i => $id) {
        $key = $keys[$i];
        if (!isset($hits[$key])) {
            $get ??= db()->prepare(sql('get'));
            $hits[$key] = fetch_user($get, $id);
            apcu_store($key, $hits[$key]);
        }
        $out[] = $hits[$key];
    }
    return $out;
}
