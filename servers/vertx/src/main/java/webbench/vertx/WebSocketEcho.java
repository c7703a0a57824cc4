package webbench.vertx;

import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.http.WebSocketFrame;
import io.vertx.core.http.WebSocketFrameType;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.StandardCharsets;

/**
 * GET /ws/'s connection (servers/README.md, "WebSocket"): every message echoed with its
 * own type, on the event loop of the verticle that accepted the connection.
 *
 * <p>Vert.x (Netty's WebSocket13 decoder) answers a ping with a pong, echoes a close frame
 * and then closes TCP, and refuses unmasked client frames, frames over the frame limit
 * and every other framing error by itself. Two things it does not do, which this class
 * adds:
 * <ul>
 * <li>Netty's decoder throws a CorruptedWebSocketFrameException carrying the RFC 6455 status
 *   (1002 for an unmasked frame, 1009 for a frame over the limit) but Vert.x builds it
 *   with closeOnProtocolViolation(false) and only hands the exception to the WebSocket's
 *   exceptionHandler before dropping the connection: the exceptionHandler sends the close
 *   frame with that status first.</li>
 * <li>Vert.x's textMessageHandler turns a message into a String with Buffer.toString,
 *   which replaces bytes that are not UTF-8, and nothing in Vert.x validates them (Netty's
 *   Utf8FrameValidator is only added by Netty's own WebSocketServerProtocolHandler): the
 *   frames are taken from frameHandler instead and reassembled here, as Vert.x's own
 *   aggregator does (up to HttpServerOptions' maxWebSocketMessageSize), and a text message
 *   is decoded with the JDK's strict UTF-8 decoder (malformed input reported, not
 *   replaced): not UTF-8, the connection is closed with 1007.</li>
 * </ul>
 */
final class WebSocketEcho implements Handler<WebSocketFrame> {
  private static final short INVALID_PAYLOAD = 1007;
  private static final short MESSAGE_TOO_BIG = 1009;

  private final ServerWebSocket ws;
  private final CharsetDecoder utf8;
  private final int maxMessage;
  /** The type of the message being reassembled (TEXT or BINARY), null between messages. */
  private WebSocketFrameType kind;
  private Buffer message;

  private WebSocketEcho(ServerWebSocket ws, CharsetDecoder utf8, int maxMessage) {
    this.ws = ws;
    this.utf8 = utf8;
    this.maxMessage = maxMessage;
  }

  /**
   * Serve one upgraded connection. `utf8` is the verticle's decoder (a connection's handlers
   * all run on its event loop), `maxMessage` the server's maxWebSocketMessageSize.
   */
  static void serve(ServerWebSocket ws, CharsetDecoder utf8, int maxMessage) {
    ws.frameHandler(new WebSocketEcho(ws, utf8, maxMessage));
    ws.exceptionHandler(e -> {
      if (e instanceof CorruptedWebSocketFrameException bad && !ws.isClosed()) {
        ws.close((short) bad.closeStatus().code(), bad.closeStatus().reasonText());
      }
    });
  }

  static CharsetDecoder utf8Decoder() {
    return StandardCharsets.UTF_8.newDecoder(); // CodingErrorAction.REPORT by default
  }

  @Override
  public void handle(WebSocketFrame frame) {
    switch (frame.type()) {
      case TEXT, BINARY -> {
        // Netty refuses a new data frame inside a fragmented message (1002)
        kind = frame.type();
        message = frame.binaryData();
      }
      case CONTINUATION -> {
        // Netty refuses a continuation outside a fragmented message (1002); null here
        // only after a message over the limit, once the close frame is sent
        if (message == null) {
          return;
        }
        Buffer more = frame.binaryData();
        if (message.length() + more.length() > maxMessage) {
          kind = null;
          message = null;
          ws.close(MESSAGE_TOO_BIG);
          return;
        }
        message.appendBuffer(more);
      }
      default -> {
        // ping (Vert.x sent the pong), pong (ignored), close (Vert.x answers it)
        return;
      }
    }
    if (!frame.isFinal()) {
      return;
    }
    Buffer whole = message;
    WebSocketFrameType type = kind;
    kind = null;
    message = null;
    if (type == WebSocketFrameType.BINARY) {
      ws.writeBinaryMessage(whole);
    } else {
      String text;
      try {
        text = utf8.reset().decode(ByteBuffer.wrap(whole.getBytes())).toString();
      } catch (CharacterCodingException e) {
        ws.close(INVALID_PAYLOAD);
        return;
      }
      ws.writeTextMessage(text);
    }
    // Vert.x's back-pressure: a client that does not read stops being read
    if (ws.writeQueueFull()) {
      ws.pause();
      ws.drainHandler(v -> ws.resume());
    }
  }
}
