"""A fleet of worker processes sharing one restlayer store through Redis (`python -m examples.fleet`)."""
