"""`manage.py create_user NAME --role viewer|operator`: a dashboard login with a role; the password is printed once."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from fabricweb.dashboard.models import OPERATOR, ROLES


class Command(BaseCommand):
    help = (
        "Create a dashboard user with a role (viewer: read; operator: acknowledge, silence, accept baselines, "
        "edit link policies), or give an existing one a new role and password. Prints a new random password once."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=ROLES)
        parser.add_argument("--url", default="", help="where to log in, printed with the password")

    def handle(self, *args, username: str, role: str, url: str, **options):
        User = get_user_model()
        if not username.strip() or len(username) > 150:
            raise CommandError("username: give 1 to 150 characters")
        try:
            groups = {g.name: g for g in Group.objects.filter(name__in=ROLES)}
            wanted = groups[role]
        except KeyError:
            raise CommandError(f"no group {role!r}: run `manage.py migrate` first") from None
        password = secrets.token_urlsafe(12)
        with transaction.atomic():
            user, created = User.objects.get_or_create(**{User.USERNAME_FIELD: username})
            user.set_password(password)
            user.is_active = True
            user.is_staff = role == OPERATOR  # the admin, for link policies (its group's rights only)
            user.save()
            user.groups.remove(*groups.values())
            user.groups.add(wanted)
        where = f" at {url}" if url else ""
        verb = "created" if created else "updated"
        self.stdout.write(f"{role} {username!r} {verb}: log in{where} with password {password}")
        self.stderr.write("Store it now: it is not shown again.")
