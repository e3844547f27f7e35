from django.contrib import admin
from django.utils import timezone

from .models import WallLink


@admin.register(WallLink)
class WallLinkAdmin(admin.ModelAdmin):
    list_display = ("name", "created_by_name", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("token_hash", "created_by_name", "created_at", "last_used_at")
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False  # the token is shown once, on /wall/links/

    @admin.action(description="Revoke the selected wall links")
    def revoke(self, request, queryset):
        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
