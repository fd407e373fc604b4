DROP TABLE pending_messages;
