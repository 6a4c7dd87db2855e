"""UI layer: Streamlit pages, components and chart builders."""
