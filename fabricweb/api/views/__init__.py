"""API views, one module per resource. Each returns JSON-able data or raises http.ApiError."""
