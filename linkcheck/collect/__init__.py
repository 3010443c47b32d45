"""Collection: what to run on each node (specs), how to run it (collector), where it goes (bundle)."""
