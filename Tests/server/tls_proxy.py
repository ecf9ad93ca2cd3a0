"""A TLS-terminating TCP proxy on 127.0.0.1, for the clients that only speak HTTPS (gsutil): it takes TLS on a free
port and forwards the bytes, as they are, to `storesh serve`'s plain HTTP port. Its certificate is a self-signed one
made with openssl in the test's own folder; the client is told not to check it.

One asyncio loop in a thread of its own does all the work (OpenSSL's objects are not shared between threads)."""
import asyncio
import socket
import ssl
import subprocess
import threading


def self_signed_certificate(folder):
    """A key and a certificate for 127.0.0.1, valid a day, made in `folder`: (certificate path, key path)."""
    certificate, key = str(folder / "proxy.crt"), str(folder / "proxy.key")
    done = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                           "-days", "1", "-keyout", key, "-out", certificate], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    return certificate, key


class TlsProxy:
    """TLS on https://127.0.0.1:PORT, forwarded to http://127.0.0.1:TARGET_PORT. stop() closes it and every
    connection through it."""

    def __init__(self, target_port, certificate, key):
        self.target_port = target_port
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(certificate, key)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self.loop = asyncio.new_event_loop()
        self.connections = set()
        self.errors = []
        started = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(started,), name="tls-proxy", daemon=True)
        self.thread.start()
        started.wait(30)
        assert started.is_set(), "the TLS proxy did not start"

    def _run(self, started):
        asyncio.set_event_loop(self.loop)

        async def begin():
            self.server = await asyncio.start_server(self._connection, sock=self.listener, ssl=self.context,
                                                     ssl_handshake_timeout=30)
            started.set()

        self.loop.run_until_complete(begin())
        self.loop.run_forever()
        self.loop.close()

    async def _connection(self, client_reader, client_writer):
        task = asyncio.current_task()
        self.connections.add(task)
        server_writer = upstream = None
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
            upstream = asyncio.ensure_future(self._pump(client_reader, server_writer))
            await self._pump(server_reader, client_writer)
            # The server hung up: so does the proxy, on the client's side (TLS has no half-close).
            client_writer.close()
            await upstream
        except (OSError, asyncio.CancelledError):
            pass  # one side hung up, or the proxy is stopping: both connections are closed below
        finally:
            if upstream is not None and not upstream.done():
                upstream.cancel()
                await asyncio.gather(upstream, return_exceptions=True)
            for writer in (client_writer, server_writer):
                if writer is not None:
                    writer.close()
            self.connections.discard(task)

    @staticmethod
    async def _pump(reader, writer):
        """Copies bytes from reader to writer until reader's end, then ends writer's direction (a half-close)."""
        while True:
            data = await reader.read(1 << 16)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()

    def stop(self):
        async def end():
            self.server.close()
            for task in list(self.connections):
                task.cancel()
            await asyncio.gather(*self.connections, return_exceptions=True)
            await self.server.wait_closed()

        if self.loop.is_running():
            asyncio.run_coroutine_threadsafe(end(), self.loop).result(30)
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        assert not self.thread.is_alive(), "the TLS proxy did not stop"
