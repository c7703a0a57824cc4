<?php /** @var array<int, string> $fortunes id => message, sorted */ ?>
<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr><?php foreach ($fortunes as $id => $message): ?><tr><td><?= $id ?></td><td><?= htmlspecialchars($message, ENT_QUOTES | ENT_SUBSTITUTE | ENT_HTML5, 'UTF-8') ?></td></tr><?php endforeach ?></table></body></html>
