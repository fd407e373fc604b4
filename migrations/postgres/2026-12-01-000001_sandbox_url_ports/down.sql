DROP INDEX sandboxes_url_port;
ALTER TABLE sandboxes DROP COLUMN url_port;
