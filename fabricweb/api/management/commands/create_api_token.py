"""`manage.py create_api_token --user U --name N`: print a new API token once."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError, transaction

from fabricweb.api.models import ApiToken


class Command(BaseCommand):
    help = "Create a read-only API token for a user and print it (only its hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="username the token acts as")
        parser.add_argument("--name", required=True, help="what the token is for, e.g. 'grafana' or 'ci'")

    def handle(self, *args, user: str, name: str, **options):
        name = name.strip()
        if not name or len(name) > ApiToken._meta.get_field("name").max_length:
            raise CommandError("--name: give 1 to 100 characters")
        User = get_user_model()
        try:
            owner = User.objects.get(**{User.USERNAME_FIELD: user})
        except User.DoesNotExist:
            raise CommandError(f"--user: no user {user!r}") from None
        if not owner.is_active:
            raise CommandError(f"--user: {user!r} is not active")
        try:
            with transaction.atomic():
                _, token = ApiToken.issue(owner, name)
        except IntegrityError:
            raise CommandError(f"--name: {user!r} already has a live token named {name!r}") from None
        # The token alone on stdout, so that scripts can capture it; the warning goes to stderr.
        self.stdout.write(token)
        self.stderr.write("Store it now: it is not shown again (only its SHA-256 is kept).")
