"""The two roles as Django groups: viewer (read) and operator (acknowledge, silence, accept
baselines, edit link policies). Permissions are created here first: on a fresh database
Django creates them only after all migrations (post_migrate)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

VIEWER_PERMISSIONS = (("health", "view_event"), ("health", "view_linkpolicy"))
OPERATOR_PERMISSIONS = (
    ("health", "operate"),
    ("health", "add_linkpolicy"),
    ("health", "change_linkpolicy"),
    ("health", "delete_linkpolicy"),
    ("health", "view_linkpolicy"),
    ("health", "view_event"),
)


def create_roles(apps, schema_editor):
    db = schema_editor.connection.alias  # the database being migrated, not necessarily `default`
    for config in apps.get_app_configs():
        config.models_module = True
        create_permissions(config, apps=apps, verbosity=0, using=db)
        config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, wanted in (("viewer", VIEWER_PERMISSIONS), ("operator", OPERATOR_PERMISSIONS)):
        group, _ = Group.objects.using(db).get_or_create(name=name)
        for app_label, codename in wanted:
            group.permissions.add(Permission.objects.using(db).get(content_type__app_label=app_label, codename=codename))


def remove_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.using(schema_editor.connection.alias).filter(name__in=("viewer", "operator")).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0001_initial"),
        ("health", "0002_operator_state"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_roles, remove_roles)]
