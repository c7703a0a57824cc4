#!/bin/sh
# The official image's first start, in short: an empty data folder (compose gives a
# tmpfs) is initialised, and an init file run by the server before it accepts anyone
# sets root's password and creates MYSQL_DATABASE and MYSQL_USER (MariaDB's default
# plugin, mysql_native_password, as docker-compose.yml makes MySQL 8.4's). Every root
# account gets the password: on the host's network a client on 127.0.0.1 is matched by
# install-db's 'root'@'127.0.0.1' before 'root'@'%'.
set -eu
datadir=/var/lib/mysql
mkdir -p "$datadir" /run/mysqld && chown mysql:mysql "$datadir" /run/mysqld
if [ ! -d "$datadir/mysql" ]; then
    mariadb-install-db --user=mysql --datadir="$datadir" --skip-test-db \
        --auth-root-authentication-method=normal >/dev/null
fi
cat > /run/mysqld/init.sql <<SQL
ALTER USER 'root'@'localhost' IDENTIFIED BY '${MYSQL_ROOT_PASSWORD}';
ALTER USER IF EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '${MYSQL_ROOT_PASSWORD}';
ALTER USER IF EXISTS 'root'@'::1' IDENTIFIED BY '${MYSQL_ROOT_PASSWORD}';
CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY '${MYSQL_ROOT_PASSWORD}';
GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;
CREATE DATABASE IF NOT EXISTS \`${MYSQL_DATABASE}\`;
CREATE USER IF NOT EXISTS '${MYSQL_USER}'@'%' IDENTIFIED BY '${MYSQL_PASSWORD}';
GRANT ALL ON \`${MYSQL_DATABASE}\`.* TO '${MYSQL_USER}'@'%';
SQL
chown mysql /run/mysqld/init.sql
exec mariadbd --user=mysql --datadir="$datadir" --bind-address=0.0.0.0 \
    --init-file=/run/mysqld/init.sql "$@"
