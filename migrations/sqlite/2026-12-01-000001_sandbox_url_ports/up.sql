-- The port of a sandbox's own listener (the port form of its URL, `--sandbox-url-ports`):
-- assigned once by the first replica that sees the sandbox, unique among the sandboxes that
-- hold one, and set back to NULL when the sandbox is deleted (the port is reusable then).
ALTER TABLE sandboxes ADD COLUMN url_port INTEGER CHECK (url_port BETWEEN 1 AND 65535);
CREATE UNIQUE INDEX sandboxes_url_port ON sandboxes (url_port);
