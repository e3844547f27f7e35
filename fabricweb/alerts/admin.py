from django.contrib import admin, messages

from .models import Channel, Delivery
from .outbox import kick
from .routing import make_test_delivery


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "kind",
        "enabled",
        "severities",
        "wait_s",
        "repeat_s",
        "state",
        "last_error",
        "last_error_at",
    ]
    list_filter = ["kind", "enabled", "state"]
    search_fields = ["name"]
    readonly_fields = ["state", "last_error", "last_error_at", "last_success_at"]
    actions = ["send_test_notification"]

    @admin.action(description="Send a test notification")
    def send_test_notification(self, request, queryset):
        for channel in queryset:
            make_test_delivery(channel)
        kick()
        self.message_user(
            request,
            f"Test notification queued for {queryset.count()} channel(s); see Deliveries for the outcome.",
            messages.SUCCESS,
        )


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["created_at", "channel", "reason", "status", "attempts", "sent_at", "last_error", "keys"]
    list_filter = ["status", "reason", "channel"]
    search_fields = ["keys", "uid"]
    list_select_related = ["channel"]
    readonly_fields = [f.name for f in Delivery._meta.fields]

    def has_add_permission(self, request):
        return False
