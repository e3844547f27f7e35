from django.contrib import admin

from .models import PortRollup, PortSample


@admin.register(PortSample)
class PortSampleAdmin(admin.ModelAdmin):
    list_display = ["ts", "port", "state_id", "speed", "lanes", "interval_s", "symbol_error", "reset", "capped"]
    raw_id_fields = ["port"]
    list_select_related = ["port__device__node"]
    date_hierarchy = "ts"
    # Millions of rows: an exact count per page load would be the slowest query of the admin.
    show_full_result_count = False


@admin.register(PortRollup)
class PortRollupAdmin(admin.ModelAdmin):
    list_display = ["bucket", "period_s", "port", "samples", "worst_state_id", "symbol_error", "max_xmit_bps"]
    list_filter = ["period_s"]
    raw_id_fields = ["port"]
    list_select_related = ["port__device__node"]
    show_full_result_count = False
