"""The project's scripts, by what they make; ``python -m scripts`` lists them."""
