//! Partition identities and the reuse scope that decides which partitions may share a connection.
//!
//! A partition is a placement scope: it owns the sockets and drivers it creates, on its own
//! runtime. Whether *another* partition may dispatch through one of those connections is a
//! separate, configurable question ([`ConnectionReuseScope`]): eligibility moves dispatch
//! authority, never the socket, the driver or the connection's capacity permit.

use std::fmt;
use std::sync::Arc;

/// The identity of a partition within one pool.
///
/// Explicit partitions are numbered with [`from_index`](Self::from_index). The
/// [`ANONYMOUS`](Self::ANONYMOUS) identity is reserved for the single partition a pool creates
/// when none are declared; `from_index` can never produce it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PartitionId(u64);

impl PartitionId {
    /// The reserved identity of the implicit partition of a pool without explicit partitions.
    pub const ANONYMOUS: PartitionId = PartitionId(u64::MAX);

    /// The identity of the explicit partition numbered `index`.
    pub const fn from_index(index: u32) -> PartitionId {
        PartitionId(index as u64)
    }

    /// Whether this is the reserved anonymous identity.
    pub const fn is_anonymous(self) -> bool {
        self.0 == u64::MAX
    }

    /// The index this identity was made from, or `None` for the anonymous partition.
    pub const fn index(self) -> Option<u32> {
        if self.is_anonymous() {
            None
        } else {
            Some(self.0 as u32)
        }
    }
}

impl fmt::Debug for PartitionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index() {
            Some(i) => write!(f, "PartitionId({i})"),
            None => f.write_str("PartitionId(anonymous)"),
        }
    }
}

impl fmt::Display for PartitionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index() {
            Some(i) => write!(f, "{i}"),
            None => f.write_str("anonymous"),
        }
    }
}

/// Which partitions may dispatch through a connection another partition owns.
///
/// Only dispatch eligibility depends on the scope. Reclaim (closing a peer's idle connection to
/// move its permit) moves capacity, not I/O, and is allowed in every scope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ConnectionReuseScope {
    /// A connection serves only the partition that owns it.
    Partition,
    /// Partitions bound to the same network interface share connections; all partitions bound
    /// to no interface form one group. The default: traffic keeps leaving by the interface its
    /// partition chose.
    #[default]
    NetworkInterface,
    /// Every partition may use every connection of the pool.
    Pool,
}

/// The set of partitions that may share connections, as decided by the reuse scope.
///
/// Two partitions may dispatch through each other's connections exactly when their groups are
/// equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EligibilityGroup {
    /// Only this partition.
    Partition(PartitionId),
    /// Every partition bound to this interface (`None`: every unbound partition).
    Interface(Option<Arc<str>>),
    /// Every partition.
    Pool,
}

impl EligibilityGroup {
    /// The group of a partition with the given identity and interface under `scope`.
    pub fn of(scope: ConnectionReuseScope, id: PartitionId, interface: Option<&Arc<str>>) -> Self {
        match scope {
            ConnectionReuseScope::Partition => EligibilityGroup::Partition(id),
            ConnectionReuseScope::NetworkInterface => {
                EligibilityGroup::Interface(interface.cloned())
            }
            ConnectionReuseScope::Pool => EligibilityGroup::Pool,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_index_never_produces_the_anonymous_identity() {
        assert!(!PartitionId::from_index(u32::MAX).is_anonymous());
        assert!(!PartitionId::from_index(0).is_anonymous());
        assert!(PartitionId::ANONYMOUS.is_anonymous());
        assert_eq!(PartitionId::from_index(7).index(), Some(7));
        assert_eq!(PartitionId::ANONYMOUS.index(), None);
        assert_eq!(PartitionId::ANONYMOUS.to_string(), "anonymous");
    }

    #[test]
    fn groups_follow_the_scope() {
        let (a, b) = (PartitionId::from_index(0), PartitionId::from_index(1));
        let eth0: Arc<str> = "eth0".into();
        let eth1: Arc<str> = "eth1".into();
        let g = |scope, id, iface| EligibilityGroup::of(scope, id, iface);
        use ConnectionReuseScope::*;
        assert_ne!(g(Partition, a, None), g(Partition, b, None));
        assert_eq!(g(NetworkInterface, a, None), g(NetworkInterface, b, None));
        assert_eq!(
            g(NetworkInterface, a, Some(&eth0)),
            g(NetworkInterface, b, Some(&eth0))
        );
        assert_ne!(
            g(NetworkInterface, a, Some(&eth0)),
            g(NetworkInterface, b, Some(&eth1))
        );
        assert_ne!(
            g(NetworkInterface, a, Some(&eth0)),
            g(NetworkInterface, b, None)
        );
        assert_eq!(g(Pool, a, Some(&eth0)), g(Pool, b, None));
        assert_eq!(ConnectionReuseScope::default(), NetworkInterface);
    }
}
