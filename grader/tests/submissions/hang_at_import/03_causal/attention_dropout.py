"""Attack: hang forever while being imported."""

while True:
    pass
