DROP TABLE conversation_tombstones;
