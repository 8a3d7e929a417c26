"""The ground floor every room stands on: the records passed between parts (records), work in
turns on the event loop (turns), specwatch's own counters (health, histogram), and the small
pieces of its own endpoints and process (httpjson, listening, logs)."""
