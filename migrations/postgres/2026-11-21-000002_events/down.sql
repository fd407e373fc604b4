DROP TABLE events;
DROP TABLE conversations;
DROP TABLE sandboxes;
