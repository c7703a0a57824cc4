from django.db import models


class User(models.Model):
    """The contract's `users` table. Created and restored by the harness, never by Django."""

    user_id = models.AutoField(primary_key=True)
    username = models.CharField(max_length=256)
    email = models.CharField(max_length=256, null=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    is_archived = models.BooleanField(default=False)

    class Meta:
        managed = False
        db_table = "users"


class Fortune(models.Model):
    """The database suite's `fortune` table (read only). Created and restored by the
    harness, never by Django."""

    id = models.IntegerField(primary_key=True)
    message = models.CharField(max_length=2048)

    class Meta:
        managed = False
        db_table = "fortune"
