"""Data layer: loading, caching, deriving and querying. Never imports Streamlit."""
