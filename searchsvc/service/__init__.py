"""searchsvc as a shared service: the REST API (the only package that imports the web
framework)."""

from searchsvc.service.app import ServiceConfig, create_app

__all__ = ["ServiceConfig", "create_app"]
