"""The engine as a process and a server beside specwatch: started as a child, its config and
version, its models, its Prometheus page scraped, its log followed."""
